#!/usr/bin/env node
/**
 * `npm run test:compat` (gulp compat): installs the n8n of each profile that is not cached yet, builds
 * and packs the package once, then in each n8n, one after the other: install.test.mjs (every install
 * path lands the package alone and n8n loads it, queue-mode workers included; COMPAT_QUEUE=0 leaves
 * queue mode out), suite.test.mjs (the scenarios, on the package as the README installs it),
 * crash.test.mjs (n8n killed mid-Generate, the crashed execution retried; on the e2e suite's pinned
 * n8n, profile default, test/e2e/crash.test.mjs has these cases and more; before n8n 2.14
 * crash-nokey.test.mjs instead: without an Idempotency Key, per trigger and Save Execution Progress) and queue-crash.test.mjs
 * (n8n 1.x queue mode: the worker killed mid-Generate, Bull's re-run of the job; skipped on 2.x and
 * with COMPAT_QUEUE=0). Prints a summary line per version; exits non-zero if anything failed.
 *
 *   npm run test:compat                                # every profile of MATRIX (n8n-install.mjs)
 *   npm run test:compat -- --profiles=min,default      # some
 *   npm run test:compat -- --test-name-pattern=Retry   # other arguments go to node --test
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { MATRIX, PROFILES, ensureN8n, installPaths, isInstalled } from '../../tools/n8n-install.mjs';
import { REPO_ROOT, packPackage } from '../e2e/n8n.mjs';
import { atLeast } from './n8n-rest.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const chosen = args.find((arg) => arg.startsWith('--profiles='));
const profiles = chosen ? chosen.slice('--profiles='.length).split(',').filter(Boolean) : MATRIX;
const testArgs = args.filter((arg) => arg !== chosen);
const unknown = profiles.filter((name) => !PROFILES[name]);
if (unknown.length || !profiles.length) {
	console.error(`test:compat: unknown profile ${unknown.join(', ') || '(none)'}; known: ${Object.keys(PROFILES).join(', ')}`);
	process.exit(2);
}

const seconds = (ms) => `${Math.round(ms / 1000)} s`;
const say = (message) => process.stderr.write(`[compat] ${message}\n`);
const describe = (name) => {
	const { n8n, node } = installPaths(name).profile;
	return `n8n ${n8n} (${name}, Node ${node ?? process.versions.node})`;
};

function runSuite(profile, tarball, summaryFile) {
	const reporter = path.join(here, 'reporter.mjs');
	// The pinned n8n of the e2e suite (profile default) has its crash cases there, all nine
	// (test/e2e/crash.test.mjs): crash.test.mjs runs on the other versions.
	// crash-nokey.test.mjs (issue 50: a crash retried without an Idempotency Key) on n8n before 2.14 only:
	// from 2.14 the resume token names the run, and test/e2e/crash.test.mjs has those cases.
	const beforeToken = !atLeast(installPaths(profile).profile.n8n, '2.14.0');
	// Before 2.14 crash-nokey.test.mjs has crash.test.mjs's plain case in every shape (one n8n start
	// and kill less); the Idempotency Key's crash case runs on the others and in the e2e suite.
	const crash = beforeToken ? 'crash-nokey.test.mjs' : 'crash.test.mjs';
	const suites = ['install.test.mjs', 'suite.test.mjs', crash, 'queue-crash.test.mjs']
		.filter((name) => !(name === 'crash.test.mjs' && profile === 'default'))
		.map((name) => path.join(here, name));
	return new Promise((resolve, reject) => {
		const child = spawn(
			process.execPath,
			[
				'--import',
				'tsx',
				'--test',
				'--test-concurrency=1',
				'--test-reporter=spec',
				'--test-reporter-destination=stdout',
				`--test-reporter=${reporter}`,
				`--test-reporter-destination=${summaryFile}`,
				...testArgs,
				...suites,
			],
			{ cwd: REPO_ROOT, stdio: 'inherit', env: { ...process.env, COMPAT_PROFILE: profile, COMPAT_QUEUE: queue ? '1' : '0', IMAGEPACK_TARBALL: tarball } },
		);
		child.on('error', reject);
		child.on('exit', (code, signal) => resolve(code ?? signal));
	});
}

const queue = process.env.COMPAT_QUEUE !== '0';
const started = Date.now();
// Installs first, one after the other (each takes minutes and gigabytes): a failed install stops here.
// Queue mode's PostgreSQL client comes from the profile's own n8n (test/e2e/services.mjs).
for (const profile of profiles) {
	if (isInstalled(profile)) continue;
	const begun = Date.now();
	say(`installing ${describe(profile)}…`);
	await ensureN8n(profile);
	say(`installed ${describe(profile)} in ${seconds(Date.now() - begun)}`);
}
const tarball = await packPackage();
const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'imagepack-compat-'));
const results = [];
try {
	for (const profile of profiles) {
		say(`${describe(profile)}: running the suite`);
		const summaryFile = path.join(workDir, `${profile}.json`);
		const begun = Date.now();
		const code = await runSuite(profile, tarball, summaryFile);
		let summary = null;
		try {
			summary = JSON.parse(fs.readFileSync(summaryFile, 'utf8'));
		} catch {}
		results.push({ profile, code, ms: Date.now() - begun, summary });
	}
} finally {
	fs.rmSync(path.dirname(tarball), { recursive: true, force: true });
	fs.rmSync(workDir, { recursive: true, force: true });
}

console.log('\ntest:compat summary');
for (const { profile, code, ms, summary } of results) {
	const counts = summary ? `${summary.passed} passed, ${summary.failed} failed, ${summary.skipped} skipped` : `no result (exit ${code})`;
	console.log(`compat: ${describe(profile)}: ${counts} in ${seconds(ms)}`);
	for (const name of summary?.failures ?? []) console.log(`  failed: ${name}`);
	for (const note of summary?.notes ?? []) console.log(`  note: ${note}`);
}
console.log(`compat: ${results.length} versions in ${seconds(Date.now() - started)}`);
const failed = results.some(({ code, summary }) => code !== 0 || !summary || summary.failed > 0);
process.exit(failed ? 1 : 0);
