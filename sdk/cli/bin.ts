#!/usr/bin/env -S node --no-node-snapshot
/**
 * `keel`: the command-line client (`npm run keel -- <command>`). Commands live in
 * commands/, one file per concern; the HTTP calls go through sdk/client.
 */
import { buildProgram } from './program.ts';

const [major] = process.versions.node.split('.').map(Number);
if ((major ?? 0) < 24) {
  console.error(`keel needs Node.js 24 or newer (this is ${process.version}); run it through npm (npm run keel -- ...), which uses the Node.js 24 the project installs.`);
  process.exit(1);
}

await buildProgram().parseAsync(process.argv);
