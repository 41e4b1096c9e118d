import type { FastifyBaseLogger, LogLevel } from 'fastify';
import type { Bindings, ChildLoggerOptions, Logger } from 'pino';

type Method = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';

/**
 * A request's logger (`request.log`), whose pino child (the request id bound) is made only when
 * something logs through it. Fastify makes a child for every request whatever the level (about
 * 1 µs); most requests log nothing but their access line, which `accessLine` writes through the
 * parent with the bindings as its first fields: the same bytes as through the child (pino writes a
 * child's bindings right after its parent's, before the line's own fields).
 */
export class RequestLogger implements FastifyBaseLogger {
  private made: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: Logger,
    private readonly bindings: Bindings,
  ) {}

  private get real(): FastifyBaseLogger {
    return (this.made ??= this.parent.child(this.bindings));
  }

  /** `fields` and `msg` at info, as `info(fields, msg)` would write them; `fields` must not repeat a binding. */
  accessLine(fields: object, msg: string): void {
    if (this.made) this.made.info(fields, msg);
    else if (this.parent.isLevelEnabled('info')) this.parent.info({ ...this.bindings, ...fields }, msg);
  }

  private log(method: Method, args: unknown[]): void {
    // A level that is off makes no child.
    if (this.made || this.parent.isLevelEnabled(method)) (this.real[method] as (...a: unknown[]) => void)(...args);
  }

  fatal(...args: unknown[]): void {
    this.log('fatal', args);
  }
  error(...args: unknown[]): void {
    this.log('error', args);
  }
  warn(...args: unknown[]): void {
    this.log('warn', args);
  }
  info(...args: unknown[]): void {
    this.log('info', args);
  }
  debug(...args: unknown[]): void {
    this.log('debug', args);
  }
  trace(...args: unknown[]): void {
    this.log('trace', args);
  }
  silent(): void {}

  get level(): LogLevel {
    return (this.made?.level ?? this.parent.level) as LogLevel;
  }

  set level(level: LogLevel) {
    this.real.level = level;
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.real.child(bindings, options);
  }
}

/**
 * Fastify's `childLoggerFactory`: a RequestLogger, or pino's own child when the route asks for a
 * level or serializers of its own (none does today).
 */
export function requestLogger(logger: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
  if (options.level !== undefined || options.serializers !== undefined || typeof (logger as Partial<Logger>).isLevelEnabled !== 'function') return logger.child(bindings, options);
  return new RequestLogger(logger as Logger, bindings);
}
