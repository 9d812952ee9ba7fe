#!/usr/bin/env node
/**
 * Run once before the end-to-end tests (gulp e2e): installs the pinned n8n 2.41.1 (Node 24) when it is not
 * cached yet, and any profile named with --profile (other n8n versions are `npm run test:compat`'s), then
 * builds and packs the package. Progress goes to stderr; the last
 * stdout line is the tarball path.
 *
 *   node tools/prepare.mjs [--no-build] [--profile=NAME …]
 */
import { ensureN8n } from './n8n-install.mjs';
import { packPackage } from '../test/e2e/n8n.mjs';

const args = process.argv.slice(2);
const profiles = new Set(['default', ...args.filter((a) => a.startsWith('--profile=')).map((a) => a.split('=')[1])]);
const started = Date.now();
await Promise.all([...profiles].map((profile) => ensureN8n(profile)));
const tarball = await packPackage({ build: !args.includes('--no-build') });
process.stderr.write(`[e2e] prepared in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
console.log(tarball);
