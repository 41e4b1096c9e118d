import type { FastifyPluginAsync } from 'fastify';
import type { Files } from '../files/files.ts';
import type { Database } from '../store/database.ts';
import type { DocumentedResource } from '../openapi/service-document.ts';
import { CONSOLE_DIR, consoleRoutes } from './console-routes.ts';
import { docsRoutes } from './docs-routes.ts';
import { signedFileRoutes } from './file-routes.ts';
import { healthRoutes } from './health-routes.ts';

export interface PublicDeps {
  database: Database;
  files: Files;
  resources: readonly DocumentedResource[];
  publicUrl: string;
  maxFileBytes: number;
}

/**
 * What answers without an API key, as a plugin of its own beside /api (api-plugin.ts): health,
 * the service's documentation and OpenAPI document, the browser console's page and assets, and the signed file URLs (their signature is
 * their key).
 */
export function publicPlugin(deps: PublicDeps): FastifyPluginAsync {
  return async (open) => {
    healthRoutes(open, deps.database);
    docsRoutes(open, { resources: deps.resources, publicUrl: deps.publicUrl });
    consoleRoutes(open, CONSOLE_DIR, { storage: deps.files.storage, publicUrl: deps.publicUrl, warn: (message) => open.log.warn(message) });
    signedFileRoutes(open, deps.files, deps.maxFileBytes);
  };
}
