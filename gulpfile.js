/**
 * Orchestration of the things that are not a plain compile: the emulator, the end-to-end suite and the
 * compatibility matrix in real n8n, the sandbox, the benchmarks and the verification scan. `n8n-node
 * build` does the build.
 */
const { execFileSync, spawn } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

/** Runs a command, inheriting stdio; rejects on a non-zero exit. */
function run(command, args, options = {}) {
	return new Promise((resolve, reject) => {
		const child = spawn(command, args, { stdio: 'inherit', ...options });
		child.on('error', reject);
		child.on('exit', (code, signal) =>
			code === 0 ? resolve() : reject(new Error(`${command} ${args.join(' ')} exited with ${code ?? signal}`)),
		);
	});
}

function emulator() {
	return run(process.execPath, ['--import', 'tsx', 'test/emulator/cli.mjs', ...process.argv.slice(3)]);
}

/**
 * The packed package in a real, pinned n8n (installed once into ~/.cache, see tools/n8n-install.mjs),
 * workflows executed against the emulator (the other n8n versions: `npm run test:compat`).
 * `npm run test:e2e -- --test-name-pattern=generate` filters.
 */
function e2e() {
	return runE2e((name) => name.endsWith('.test.mjs'));
}

/**
 * Queue mode alone (test/e2e/queue.test.mjs): n8n 2.41.1 main + two workers, PostgreSQL and Redis
 * (installed with apt-get when missing and running as root). Needs only n8n 2.x.
 */
function queue() {
	return runE2e((name) => name === 'queue.test.mjs');
}

/**
 * The editor in Debian's Chromium (test/e2e/editor.test.mjs, also part of e2e):
 * `npm run test:ui`, or `npm run test:ui -- --screenshots` to rewrite the README's pictures in docs/images/.
 */
function ui() {
	const screenshots = process.argv.includes('--screenshots');
	return runE2e((name) => name === 'editor.test.mjs', {}, screenshots ? { UI_SCREENSHOTS: '1' } : {});
}

async function runE2e(wanted, prepareEnv = {}, testEnv = {}) {
	const dir = path.join('test', 'e2e');
	// Install n8n (first run only) and build + pack once, with plain progress output, then the suites.
	const tarball = execFileSync(process.execPath, [path.join('tools', 'prepare.mjs')], {
		stdio: ['ignore', 'pipe', 'inherit'],
		env: { ...process.env, ...prepareEnv },
	})
		.toString()
		.trim()
		.split('\n')
		.pop();
	const names = fs.readdirSync(dir).filter(wanted);
	const env = { ...process.env, ...testEnv, IMAGEPACK_TARBALL: tarball };
	const args = process.argv.slice(3).filter((arg) => arg !== '--screenshots');
	const suites = (files, concurrency) =>
		files.length
			? run(process.execPath, ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, '--test-reporter=spec', ...args, ...files.map((name) => path.join(dir, name))], { env })
			: Promise.resolve();
	// The trigger's suites mostly wait (poll times, the API's latency): side by side first, then the
	// others one at a time (they time kills and holds). Both groups run whatever the first gave.
	const waiting = names.filter((name) => SIDE_BY_SIDE.includes(name));
	const others = names.filter((name) => !SIDE_BY_SIDE.includes(name));
	const results = [];
	for (const [files, concurrency] of [[waiting, waiting.length], [others, 1]]) {
		results.push(await suites(files, concurrency).then(() => null, (error) => error));
	}
	fs.rmSync(path.dirname(tarball), { recursive: true, force: true });
	const failed = results.find(Boolean);
	if (failed) throw failed;
}

/** The end-to-end suites that run side by side (see runE2e). */
const SIDE_BY_SIDE = ['trigger.test.mjs', 'trigger-bounded.test.mjs', 'trigger-schedulers.test.mjs'];

/**
 * The compatibility matrix (test/compat/run.mjs): installs the n8n versions not cached yet, builds and
 * packs once, runs test/compat/suite.test.mjs in each n8n and prints a summary line per version.
 * `npm run test:compat -- --profiles=min,default` runs some.
 */
function compat() {
	return run(process.execPath, ['test/compat/run.mjs', ...process.argv.slice(3)]);
}

/** Emulator + the pinned n8n with this package, a ready credential and the example workflows. */
function sandbox() {
	return run(process.execPath, ['--import', 'tsx', 'tools/sandbox.mjs', ...process.argv.slice(3)]);
}

/** Performance against the ideal (the targets: docs/performance.md), on the emulator: `npm run bench [-- --quick|--markdown|--json]`. */
function bench() {
	return run(process.execPath, ['--import', 'tsx', 'test/bench/run.mjs', ...process.argv.slice(3)]);
}

/** Packs the package and runs n8n's verification scanner logic on the tarball. */
function scan() {
	return run('npm', ['run', 'build']).then(() => run(process.execPath, ['test/scan/scan.mjs']));
}

module.exports = { emulator, e2e, queue, ui, compat, sandbox, bench, scan, run };
