import type { EventEmitter } from 'node:events';
import type { FlowDefinition } from '../domain/flow-definition.ts';
import { type Claimed, type DeliveryStore, type Outcome } from './delivery-store.ts';
import { signature } from './signature.ts';
import type { WebhookSender } from './webhook-sender.ts';

/**
 * The delivery worker (issue "Change events", items 3 and 4): plans each enabled flow's new changes
 * into deliveries, then sends each flow's head delivery, retrying with exponential backoff. All its
 * state is in the database (delivery-store.ts), so it may stop at any point, and every instance may
 * run one. It wakes when this instance commits changes, when a retry falls due, and otherwise every
 * `pollMs` for what other instances committed.
 */

export interface WorkerOptions {
  /** Attempts before a delivery is failed, the first included (ROWHOUSE_WEBHOOK_ATTEMPTS). */
  attempts: number;
  /** The first retry's wait; each later one waits twice the one before (ROWHOUSE_WEBHOOK_RETRY_BASE_MS). */
  retryBaseMs: number;
  /** One request's limit (ROWHOUSE_WEBHOOK_TIMEOUT_MS): a lease outlasts it. */
  timeoutMs: number;
  /** The longest sleep between looks at the queue. */
  pollMs?: number;
  /** Heads sent at once (each of another flow). */
  concurrency?: number;
  warn(message: string): void;
}

/** A flow's deliveries sent one after another before its sender gives the other flows a turn. */
const CHAIN = 100;

/** The wait before retry number `n` (1 for the first retry). */
export function retryDelayMs(baseMs: number, n: number): number {
  return baseMs * 2 ** (n - 1);
}

export class WebhookWorker {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private started = false;
  /**
   * Attempts under way, each of another flow's head. They are not waited for together: a receiver
   * that answers slowly, or not at all until the timeout, holds back its own flow and no other.
   */
  private readonly sending = new Set<Promise<void>>();
  /**
   * The tables enabled flows watch, as of the last look: a commit to another table wakes no one
   * (a look is three queries, on SQLite on the writers' one connection). A flow enabled since is
   * seen by the next look, at most `pollMs` later.
   */
  private watched = new Set<string>();
  private readonly wake = (tableId: string) => {
    if (this.watched.has(tableId)) this.kick();
  };

  constructor(
    private readonly store: DeliveryStore,
    private readonly sender: WebhookSender,
    private readonly options: WorkerOptions,
    /** The change log's commit signal ('table'), when this instance keeps one. */
    private readonly committed: EventEmitter | null,
  ) {}

  start(): void {
    if (this.started) return;
    this.started = true;
    this.committed?.on('table', this.wake);
    this.kick();
  }

  async stop(): Promise<void> {
    this.started = false;
    this.committed?.off('table', this.wake);
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
    await Promise.all(this.sending);
  }

  /** Looks at the queue now (or as soon as the current look ends). */
  kick(): void {
    if (!this.started) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.running = this.run().finally(() => {
      this.running = null;
      // A kick that came after the run's last look (a send done while it asked nextDue) is not lost.
      if (this.again) this.kick();
    });
  }

  private async run(): Promise<void> {
    let sleep = this.options.pollMs ?? 1000;
    try {
      do {
        this.again = false;
        while (this.started && (await this.tick())) {
          // Planning brought new changes in: look again. A head sent looks again when it is done (send()).
        }
      } while (this.again && this.started);
      // With every sender busy, one that finishes looks again (send()).
      const due = this.sending.size < this.concurrency ? await this.store.nextDue() : undefined;
      if (due !== undefined) sleep = Math.min(sleep, Math.max(10, Date.parse(due) - Date.now()));
    } catch (err) {
      this.options.warn(`webhook deliveries: ${(err as Error).message}`);
    }
    if (!this.started) return;
    this.timer = setTimeout(() => this.kick(), sleep);
    this.timer.unref();
  }

  private get concurrency(): number {
    return this.options.concurrency ?? 16;
  }

  /** Plans every flow that is behind, then starts sending the due heads; answers whether it planned anything. */
  async tick(): Promise<boolean> {
    this.watched = new Set(await this.store.watchedTables());
    let worked = false;
    for (const flowId of await this.store.behind()) {
      while ((await this.store.plan(flowId, new Date().toISOString())) > 0) worked = true;
    }
    const room = this.concurrency - this.sending.size;
    if (room <= 0) return worked;
    const now = new Date();
    const lease = this.leaseFrom(now);
    for (const claimed of await this.store.claimHeads(now.toISOString(), lease, room)) this.send(claimed, lease);
    return worked;
  }

  /**
   * Sends a claimed head beside the others, then the flow's next heads while they are due (up to
   * CHAIN of them, so other flows get their turn); then the queue is looked at again. Each further
   * head is claimed as a tick claims, under a lease of its own: two queries a delivery.
   */
  private send(first: Claimed, firstLease: string): void {
    const flowId = first.delivery.flowId;
    const sending: Promise<void> = (async () => {
      let claimed: Claimed | undefined = first;
      let lease = firstLease;
      for (let n = 0; claimed; n++) {
        await this.attempt(claimed, lease, true);
        if (!this.started || n + 1 >= CHAIN) return;
        const now = new Date();
        lease = this.leaseFrom(now);
        [claimed] = await this.store.claimHeads(now.toISOString(), lease, 1, flowId);
      }
    })()
      .catch((err) => this.options.warn(`webhook deliveries: ${(err as Error).message}`))
      .finally(() => {
        this.sending.delete(sending);
        this.kick();
      });
    this.sending.add(sending);
  }

  /** Leases are unique per claim (a millisecond apart at least) and outlast a request. */
  private leaseFrom(now: Date): string {
    return new Date(now.getTime() + this.options.timeoutMs + 30_000 + Math.floor(Math.random() * 1000)).toISOString();
  }

  /** A retry by hand of a failed delivery: one attempt now, unless it is not failed or its flow is disabled. */
  async retry(id: string): Promise<'retried' | 'not-failed' | 'flow-disabled'> {
    const now = new Date();
    const lease = this.leaseFrom(now);
    const claimed = await this.store.claimFailed(id, now.toISOString(), lease);
    if (!claimed) return 'not-failed';
    if (!claimed.flow?.enabled) {
      await this.store.release(claimed.delivery, lease);
      return 'flow-disabled';
    }
    await this.attempt(claimed, lease, false);
    return 'retried';
  }

  /** Sends one delivery and records the outcome; `schedule` false leaves a failure failed (a retry by hand). */
  private async attempt({ delivery, flow }: Claimed, lease: string, schedule: boolean): Promise<void> {
    const definition = flow?.definition as FlowDefinition | undefined;
    let outcome: Outcome;
    if (!flow || !definition?.webhook?.url || !flow.secret) outcome = { status: null, error: 'the flow has no webhook' };
    else {
      const body = `{"id":${JSON.stringify(delivery.eventId)},"flowId":${JSON.stringify(delivery.flowId)},"change":${delivery.change}}`;
      const headers = {
        ...definition.webhook.headers,
        'Rowhouse-Event-Id': delivery.eventId,
        'Rowhouse-Signature': signature(flow.secret, body, Math.floor(Date.now() / 1000)),
      };
      outcome = await this.sender.send(definition.webhook.url, headers, body);
    }
    const now = new Date();
    const attempts = Number(delivery.attempts) + 1;
    const retryAt = schedule && outcome.error !== null && attempts < this.options.attempts ? new Date(now.getTime() + retryDelayMs(this.options.retryBaseMs, attempts)).toISOString() : null;
    await this.store.finish(delivery, lease, outcome, now.toISOString(), retryAt);
  }
}
