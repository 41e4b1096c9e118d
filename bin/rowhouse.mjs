#!/usr/bin/env node
// Launcher: loads the TypeScript sources through tsx, so `npm start` needs no build step.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli.ts');
await main(process.argv.slice(2));
