#!/usr/bin/env node
/**
 * Run once before the end-to-end tests (gulp e2e): installs the pinned n8n versions that are not cached
 * yet (2.41.1 on Node 24, and n8n 1.x for the compatibility suite unless E2E_SKIP_N8N_V1=1; the two
 * installs run side by side), then builds and packs the package. Progress goes to stderr; the last
 * stdout line is the tarball path.
 *
 *   node test/e2e/prepare.mjs [--no-build] [--profile=NAME …]
 */
import { ensureN8n } from './n8n-install.mjs';
import { packPackage } from './n8n.mjs';

const args = process.argv.slice(2);
const profiles = new Set(['default', ...args.filter((a) => a.startsWith('--profile=')).map((a) => a.split('=')[1])]);
if (process.env.E2E_SKIP_N8N_V1 !== '1') profiles.add('v1');
const started = Date.now();
await Promise.all([...profiles].map((profile) => ensureN8n(profile)));
const tarball = await packPackage({ build: !args.includes('--no-build') });
process.stderr.write(`[e2e] prepared in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
console.log(tarball);
