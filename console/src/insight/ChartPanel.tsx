import { type FormEvent, useEffect, useRef, useState } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { Api, Table } from '../api.ts';
import { ErrorBox } from '../ErrorBox.tsx';
import { type Bucket, type ChartQuery, METRIC_LABELS, type MetricFn, type Point, aggregateQuery, bucketsOf, groupable, metricFields, points } from './aggregate-model.ts';

const SYSTEM_KEYS: Record<string, string> = { createdAt: 'Created at', updatedAt: 'Updated at' };

/**
 * Insight: a chart of an aggregate of the view (GET …/rows-aggregate, CONTRACT §13) grouped by one
 * field or date bucket, one metric, as bars or lines, drawn by uPlot on a canvas (no inline style
 * or script: the page's CSP holds). The same numbers are listed in a table beside it, for screen
 * readers and for copying.
 */
export function ChartPanel({ api, table, filter }: { api: Api; table: Table; filter: string | null }) {
  const keys = table.fields.filter(groupable);
  const [query, setQuery] = useState<ChartQuery>({ groupBy: keys[0]?.code ?? 'createdAt', bucket: '', fn: 'count', field: '' });
  const [kind, setKind] = useState<'bars' | 'lines'>('bars');
  const [result, setResult] = useState<{ points: Point[]; title: string; kind: 'bars' | 'lines'; more: boolean } | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

  const keyType = table.fields.find((f) => f.code === query.groupBy)?.type ?? (SYSTEM_KEYS[query.groupBy] ? 'system' : 'text');
  const buckets = bucketsOf(keyType);
  const over = metricFields(query.fn, table.fields);
  const set = (q: Partial<ChartQuery>) => setQuery({ ...query, ...q });
  const label = (code: string) => table.fields.find((f) => f.code === code)?.name ?? SYSTEM_KEYS[code] ?? code;

  async function draw(e: FormEvent) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const page = await api.request<{ data: { group: Record<string, unknown>; metrics: Record<string, unknown> }[]; nextUrl: string | null }>(
        'GET',
        `/api/tables/${encodeURIComponent(table.id)}/rows-aggregate?${aggregateQuery(query, filter)}`,
      );
      const metric = query.fn === 'count' ? 'Rows' : `${METRIC_LABELS[query.fn]} of ${label(query.field)}`;
      setResult({ points: points(page.data, query.groupBy), title: `${metric} by ${label(query.groupBy)}${query.bucket ? ` (${query.bucket})` : ''}`, kind, more: page.nextUrl !== null });
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }

  return (
    <section aria-labelledby="chart-title" className="insight">
      <h2 id="chart-title">Chart</h2>
      <form onSubmit={draw} aria-label="Chart settings" className="row-of-inputs">
        <label>
          Group by
          <select value={query.groupBy} onChange={(e) => set({ groupBy: e.target.value, bucket: '' })}>
            {keys.map((f) => (
              <option key={f.code} value={f.code}>{f.name}</option>
            ))}
            {Object.entries(SYSTEM_KEYS).map(([code, name]) => (
              <option key={code} value={code}>{name}</option>
            ))}
          </select>
        </label>
        {buckets.length > 1 && (
          <label>
            Date bucket
            <select value={query.bucket} onChange={(e) => set({ bucket: e.target.value as Bucket })}>
              {buckets.map((b) => (
                <option key={b} value={b}>{b === '' ? '(each value)' : b}</option>
              ))}
            </select>
          </label>
        )}
        <label>
          Metric
          <select value={query.fn} onChange={(e) => { const fn = e.target.value as MetricFn; set({ fn, field: metricFields(fn, table.fields)[0]?.code ?? '' }); }}>
            {(Object.keys(METRIC_LABELS) as MetricFn[]).map((fn) => (
              <option key={fn} value={fn}>{METRIC_LABELS[fn]}</option>
            ))}
          </select>
        </label>
        {query.fn !== 'count' && (
          <label>
            Of field
            <select value={query.field} onChange={(e) => set({ field: e.target.value })}>
              {over.map((f) => (
                <option key={f.code} value={f.code}>{f.name}</option>
              ))}
            </select>
          </label>
        )}
        <label>
          Chart type
          <select value={kind} onChange={(e) => setKind(e.target.value as 'bars' | 'lines')}>
            <option value="bars">bars</option>
            <option value="lines">lines</option>
          </select>
        </label>
        <button type="submit" disabled={busy}>Draw chart</button>
      </form>
      <ErrorBox error={error} />
      {result && <ChartView {...result} />}
    </section>
  );
}

function ChartView({ points: data, title, kind, more }: { points: Point[]; title: string; kind: 'bars' | 'lines'; more: boolean }) {
  const holder = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = holder.current;
    if (!el) return;
    const xs = data.map((_p, i) => i);
    const ys = data.map((p) => p.value);
    const width = Math.max(320, Math.min(el.clientWidth || 800, 1000));
    const plot = new uPlot(
      {
        width,
        height: 280,
        legend: { show: false },
        cursor: { show: false },
        scales: { x: { time: false, range: (_u, min, max) => [min - 0.5, max + 0.5] }, y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.1 : 1] } },
        axes: [
          { values: (_u, splits) => splits.map((v) => (Number.isInteger(v) && data[v] ? data[v].label : '')), incrs: [1], stroke: '#333' },
          { stroke: '#333' },
        ],
        series: [
          {},
          kind === 'bars'
            ? { label: title, fill: '#3b6ea5', stroke: '#3b6ea5', paths: uPlot.paths.bars!({ size: [0.7, 80] }), points: { show: false } }
            : { label: title, stroke: '#3b6ea5', width: 2, points: { show: true, size: 6 } },
        ],
      },
      [xs, ys],
      el,
    );
    return () => plot.destroy();
  }, [data, title, kind]);
  return (
    <figure className="chart">
      <figcaption id="chart-caption">{title}{more ? ' (the first 1,000 groups)' : ''}</figcaption>
      <div ref={holder} role="img" aria-label={`${kind === 'bars' ? 'Bar' : 'Line'} chart: ${title}`} className={`chart-canvas chart-${kind}`} />
      <table aria-labelledby="chart-caption" className="chart-data">
        <thead>
          <tr><th scope="col">Group</th><th scope="col">Value</th></tr>
        </thead>
        <tbody>
          {data.map((p, i) => (
            <tr key={i}><td>{p.label}</td><td>{p.value === null ? '' : String(p.value)}</td></tr>
          ))}
        </tbody>
      </table>
    </figure>
  );
}
