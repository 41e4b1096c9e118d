/** Work in the background has no request to answer with its error: it is reported as a warning. */
export const warnBackground = (what: string) => (err: unknown) => process.emitWarning(`${what}: ${(err as Error)?.message ?? String(err)}`);

