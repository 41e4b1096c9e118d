import type { Need } from '../rights.tsx';

/** What the grid, the row panel and import need of the key on the table (CONTRACT §12), and what is off without it. */
export const ROW_NEEDS = {
  create: { scope: 'rows:create', without: 'rows cannot be added here' },
  update: { scope: 'rows:update', without: 'cells cannot be edited, pasted into or given a file' },
  delete: { scope: 'rows:delete', without: 'rows cannot be deleted' },
  import: { scope: 'rows:import', without: 'rows cannot be imported' },
  export: { scope: 'rows:export', without: 'rows cannot be exported' },
  schema: { scope: 'schema:write', without: 'the table and its fields cannot be changed' },
} as const satisfies Record<string, Need>;
