#!/usr/bin/env node
/**
 * Installs a pinned, real n8n (and the Node.js it needs) into a cache folder outside the repository, so
 * the end-to-end suite and the sandbox can run the package in it. Idempotent: a marker file with the exact
 * versions makes a second run instant. A half-finished earlier install is removed and redone.
 *
 *   node tools/n8n-install.mjs            # n8n 2.41.1 on Node 24 (the default profile)
 *   node tools/n8n-install.mjs --profile=v1   # the newest n8n 1.x, on this machine's Node
 *   node tools/n8n-install.mjs --print    # print the install folder, install nothing
 *
 * Cache root: $IMAGEPACK_N8N_CACHE, else ${XDG_CACHE_HOME:-~/.cache}/n8n-nodes-imagepack.
 *
 * Why it is done this way (docs/development.md says more):
 * - n8n 2.41.x needs Node >= 24; the npm registry ships Node binaries as `node-<platform>-<arch>`
 *   (the `node` package only picks one in a preinstall script, and scripts are off here).
 * - Install scripts are off (isolated-vm etc. need none of them: prebuilds), linkedom is pinned to
 *   0.18.12 (0.18.15 needs `cssomnom`, missing from the registry).
 * - sqlite3's native driver is then built from source under Node 24 against the Node 24 headers.
 * - Its own package.json and .npmrc keep n8n's dependency tree away from the package's (its lint rules
 *   forbid runtime dependencies and overrides).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const PROFILES = {
	// The version the package is developed and tested against.
	default: { n8n: '2.41.1', node: '24.21.0', overrides: { linkedom: '0.18.12' }, env: {} },
	// The newest n8n 1.x; runs on this machine's Node (20). Its nodes-base wants xlsx from a tarball URL
	// outside the npm registry (unreachable here): the registry's last xlsx stands in for it. Its default
	// expression engine runs in isolated-vm, which ships prebuilds for Node 22 and 24 only (none for
	// Node 20's ABI 115, and it does not build here): n8n's `legacy` engine is used instead.
	v1: { n8n: '1.123.81', node: null, overrides: { xlsx: '0.18.5' }, env: { N8N_EXPRESSION_ENGINE: 'legacy' } },
	// The oldest n8n the package supports (Retry On Fail under Continue On Fail keeps a retry's output
	// from n8n-core 1.99 on), on this machine's Node 20.
	min: { n8n: '1.100.1', node: null, overrides: { xlsx: '0.18.5' }, env: {} },
	// The first 2.x, on Node 20 (it allows 20.19 to 24), and a 2.x between, on Node 22 (it needs >= 22.16).
	'v2.0': { n8n: '2.0.3', node: null, overrides: { xlsx: '0.18.5' }, env: {} },
	'v2.20': { n8n: '2.20.12', node: '22.23.3', overrides: { xlsx: '0.18.5' }, env: {} },
	// The newest n8n before the resume token (2.14) that installs here: 2.12.x and 2.13.x (n8n-core 2.12.0,
	// 2.13.0, 2.13.1) are missing from the registry these machines reach (docs/old-n8n-facts.md). On Node 22.
	'v2.11': { n8n: '2.11.4', node: '22.23.3', overrides: { xlsx: '0.18.5' }, env: {} },
};

/** The compatibility matrix, oldest first (`npm run test:compat`); CI runs the first and the last. */
export const MATRIX = ['min', 'v1', 'v2.0', 'v2.11', 'v2.20', 'default'];

const MARKER = '.imagepack-install.json';

export function cacheRoot() {
	if (process.env.IMAGEPACK_N8N_CACHE) return process.env.IMAGEPACK_N8N_CACHE;
	const base = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
	return path.join(base, 'n8n-nodes-imagepack');
}

function profileOf(name) {
	const profile = PROFILES[name];
	if (!profile) throw new Error(`Unknown n8n profile "${name}" (known: ${Object.keys(PROFILES).join(', ')})`);
	return profile;
}

/** Where a profile lives and how to run it; nothing is checked or installed. */
export function installPaths(profileName = 'default') {
	const profile = profileOf(profileName);
	const dir = path.join(cacheRoot(), `n8n-${profile.n8n}${profile.node ? `-node-${profile.node}` : ''}`);
	const nodePackage = `node-${process.platform}-${process.arch}`;
	const nodeDir = profile.node ? path.join(dir, 'node_modules', nodePackage) : null;
	return {
		profile,
		dir,
		marker: path.join(dir, MARKER),
		nodePackage,
		nodeDir,
		nodeBin: nodeDir ? path.join(nodeDir, 'bin', 'node') : process.execPath,
		n8nBin: path.join(dir, 'node_modules', 'n8n', 'bin', 'n8n'),
	};
}

function expectedMarker(paths) {
	return {
		n8n: paths.profile.n8n,
		node: paths.profile.node,
		nodePackage: paths.profile.node ? paths.nodePackage : null,
		overrides: paths.profile.overrides,
	};
}

/** True when the profile is fully installed (marker matches and the binaries are there). */
export function isInstalled(profileName = 'default') {
	const paths = installPaths(profileName);
	try {
		const marker = JSON.parse(fs.readFileSync(paths.marker, 'utf8'));
		const expected = expectedMarker(paths);
		for (const key of Object.keys(expected)) {
			if (JSON.stringify(marker[key]) !== JSON.stringify(expected[key])) return false;
		}
		return fs.existsSync(paths.n8nBin) && fs.existsSync(paths.nodeBin);
	} catch {
		return false;
	}
}

function log(message) {
	process.stderr.write(`[n8n-install] ${message}\n`);
}

/** Runs a command; with `quiet`, its output is kept and shown (the last 60 lines) only if it fails. */
function exec(command, args, { quiet = false, ...options } = {}) {
	return new Promise((resolve, reject) => {
		const child = spawn(command, args, { stdio: ['ignore', quiet ? 'pipe' : 'inherit', quiet ? 'pipe' : 'inherit'], ...options });
		let output = '';
		if (quiet) {
			child.stdout.on('data', (chunk) => (output += chunk));
			child.stderr.on('data', (chunk) => (output += chunk));
		}
		child.on('error', reject);
		child.on('close', (code, signal) => {
			if (code === 0) return resolve();
			if (quiet) process.stderr.write(output.split('\n').slice(-60).join('\n') + '\n');
			reject(new Error(`${command} ${args.join(' ')} (in ${options.cwd ?? process.cwd()}) exited with ${code ?? signal}`));
		});
	});
}

function pidAlive(pid) {
	try {
		process.kill(pid, 0);
		return true;
	} catch (error) {
		return error.code === 'EPERM';
	}
}

/** A lock folder next to the install, so that two runs (sandbox + e2e) don't install at the same time. */
async function withLock(lockDir, fn) {
	for (let waited = 0; ; waited++) {
		try {
			fs.mkdirSync(lockDir);
			fs.writeFileSync(path.join(lockDir, 'pid'), String(process.pid));
			break;
		} catch (error) {
			if (error.code !== 'EEXIST') throw error;
			let owner = NaN;
			try {
				owner = Number(fs.readFileSync(path.join(lockDir, 'pid'), 'utf8'));
			} catch {}
			if (Number.isFinite(owner) && !pidAlive(owner)) {
				log(`removing stale lock of dead process ${owner}`);
				fs.rmSync(lockDir, { recursive: true, force: true });
				continue;
			}
			if (waited % 30 === 0) log(`waiting for another install (pid ${owner}) to finish…`);
			await new Promise((r) => setTimeout(r, 1000));
		}
	}
	try {
		return await fn();
	} finally {
		fs.rmSync(lockDir, { recursive: true, force: true });
	}
}

/**
 * Installs the profile unless it already is. Returns installPaths(profile).
 * The install happens in "<dir>.partial" and is renamed into place only when complete, so an interrupted
 * install never looks finished; a leftover partial folder is removed first.
 */
export async function ensureN8n(profileName = 'default', { force = false } = {}) {
	const paths = installPaths(profileName);
	if (!force && isInstalled(profileName)) return paths;
	fs.mkdirSync(path.dirname(paths.dir), { recursive: true });
	return withLock(`${paths.dir}.lock`, async () => {
		if (!force && isInstalled(profileName)) return paths; // another process finished it meanwhile
		const started = Date.now();
		const seconds = () => `${((Date.now() - started) / 1000).toFixed(0)} s`;
		const partial = `${paths.dir}.partial`;
		for (const leftover of [partial, paths.dir]) {
			if (fs.existsSync(leftover)) {
				log(`removing incomplete or outdated install ${leftover}`);
				fs.rmSync(leftover, { recursive: true, force: true });
			}
		}
		fs.mkdirSync(partial, { recursive: true });
		const { profile } = paths;
		const dependencies = { n8n: profile.n8n };
		if (profile.node) dependencies[paths.nodePackage] = profile.node;
		fs.writeFileSync(
			path.join(partial, 'package.json'),
			JSON.stringify(
				{
					name: `imagepack-e2e-n8n-${profile.n8n}`,
					private: true,
					description: 'A pinned n8n for the n8n-nodes-imagepack end-to-end tests and sandbox (generated).',
					dependencies,
					overrides: profile.overrides,
				},
				null,
				'\t',
			) + '\n',
		);
		fs.writeFileSync(
			path.join(partial, '.npmrc'),
			['ignore-scripts=true', 'fund=false', 'audit=false', 'update-notifier=false', 'loglevel=error', ''].join('\n'),
		);

		log(`installing n8n@${profile.n8n}${profile.node ? ` and ${paths.nodePackage}@${profile.node}` : ''} into ${paths.dir} (takes a few minutes, ~3 GB)…`);
		const npmCli = process.env.npm_execpath && process.env.npm_execpath.endsWith('.js') ? process.env.npm_execpath : null;
		const npm = npmCli ? [process.execPath, [npmCli]] : ['npm', []];
		const env = { ...process.env };
		// Don't let the surrounding `npm run` leak its settings (e.g. the project's prefix) into this install.
		for (const key of Object.keys(env)) if (key.startsWith('npm_') && key !== 'npm_config_cache') delete env[key];
		await exec(npm[0], [...npm[1], 'install', '--no-audit', '--no-fund', '--ignore-scripts'], { cwd: partial, env });
		log(`npm install done after ${seconds()}`);

		const partialPaths = { nodeDir: paths.nodeDir && path.join(partial, path.relative(paths.dir, paths.nodeDir)) };
		const sqliteDir = path.join(partial, 'node_modules', 'sqlite3');
		if (fs.existsSync(sqliteDir)) {
			const nodeBin = partialPaths.nodeDir ? path.join(partialPaths.nodeDir, 'bin', 'node') : process.execPath;
			const nodeDir = partialPaths.nodeDir ?? path.dirname(path.dirname(process.execPath));
			if (!fs.existsSync(path.join(nodeDir, 'include', 'node', 'node_api.h'))) {
				throw new Error(`No Node headers under ${nodeDir}/include/node: cannot build sqlite3`);
			}
			log(`building sqlite3 from source with ${nodeBin} (${profile.node ?? process.version}) — about a minute…`);
			// node-gyp from the npm that ships with this machine's Node; run it with the target Node.
			const nodeGyp = findNodeGyp();
			const buildEnv = {
				...env,
				PATH: `${path.dirname(nodeBin)}${path.delimiter}${env.PATH}`,
				npm_config_nodedir: nodeDir,
				JOBS: String(os.availableParallelism?.() ?? os.cpus().length),
			};
			await exec(nodeBin, [nodeGyp, 'rebuild', '--release', `--nodedir=${nodeDir}`, `--jobs=${buildEnv.JOBS}`], {
				cwd: sqliteDir,
				env: buildEnv,
				quiet: true,
			});
			await exec(nodeBin, ['-e', "require('sqlite3'); console.error('[n8n-install] sqlite3 loads under ' + process.version)"], {
				cwd: partial,
			});
			log(`sqlite3 built after ${seconds()}`);
		}
		fs.writeFileSync(
			path.join(partial, MARKER),
			JSON.stringify({ ...expectedMarker(paths), installedAt: new Date().toISOString(), seconds: (Date.now() - started) / 1000 }, null, '\t') + '\n',
		);
		fs.renameSync(partial, paths.dir);
		log(`n8n@${profile.n8n} installed in ${seconds()}: ${paths.dir}`);
		return paths;
	});
}

/** The Node.js of each major the README's install is tried with (`npm run test:compat`). */
export const NODE_RUNTIMES = { 20: '20.20.2', 22: '22.23.3', 24: '24.21.0' };

/**
 * A Node.js binary of `version` from the npm registry (`node-<platform>-<arch>`, about 30 MB), installed
 * once into the cache beside the n8n installs. Returns the path of its `node`.
 */
export async function ensureNodeRuntime(version) {
	const dir = path.join(cacheRoot(), `node-${version}`);
	const nodePackage = `node-${process.platform}-${process.arch}`;
	const bin = path.join(dir, 'node_modules', nodePackage, 'bin', 'node');
	if (fs.existsSync(bin)) return bin;
	fs.mkdirSync(path.dirname(dir), { recursive: true });
	return withLock(`${dir}.lock`, async () => {
		if (fs.existsSync(bin)) return bin;
		const partial = `${dir}.partial`;
		fs.rmSync(partial, { recursive: true, force: true });
		fs.mkdirSync(partial, { recursive: true });
		fs.writeFileSync(path.join(partial, 'package.json'), JSON.stringify({ name: `imagepack-node-${version}`, private: true }) + '\n');
		const env = { ...process.env };
		for (const key of Object.keys(env)) if (key.startsWith('npm_') && key !== 'npm_config_cache') delete env[key];
		log(`installing ${nodePackage}@${version}…`);
		await exec('npm', ['install', '--no-audit', '--no-fund', '--ignore-scripts', `${nodePackage}@${version}`], { cwd: partial, env, quiet: true });
		fs.rmSync(dir, { recursive: true, force: true });
		fs.renameSync(partial, dir);
		return bin;
	});
}

function findNodeGyp() {
	const candidates = [
		path.join(path.dirname(path.dirname(process.execPath)), 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'),
		'/usr/lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js',
		'/usr/local/lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js',
	];
	if (process.env.npm_config_node_gyp) candidates.unshift(process.env.npm_config_node_gyp);
	const found = candidates.find((candidate) => fs.existsSync(candidate));
	if (!found) throw new Error(`node-gyp not found (looked in ${candidates.join(', ')})`);
	return found;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
	const args = process.argv.slice(2);
	const profileName = (args.find((a) => a.startsWith('--profile=')) ?? '--profile=default').split('=')[1];
	if (args.includes('--print')) {
		console.log(installPaths(profileName).dir);
	} else {
		const started = Date.now();
		const cached = isInstalled(profileName);
		ensureN8n(profileName, { force: args.includes('--force') }).then(
			(paths) => {
				log(`${cached ? 'cached' : 'installed'}: n8n ${paths.profile.n8n} in ${paths.dir} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
				console.log(paths.dir);
			},
			(error) => {
				log(`FAILED: ${error.message}`);
				process.exit(1);
			},
		);
	}
}
