/**
 * The ways users install the package, run against the local registry (registry.mjs) and a real, pinned
 * n8n (tools/n8n-install.mjs profiles):
 *
 * - the README's by-hand path: `npm install n8n-nodes-imagepack` in `<user folder>/.n8n/nodes`, with the
 *   npm CLI of this machine run by the Node of each major (20, 22, 24) found here;
 * - n8n's editor installer (`POST /rest/community-packages`): n8n runs `npm` from PATH, so an `npm` shim
 *   first on PATH sends n8n's npm calls to the local registry (n8n passes `--registry=<its default>`
 *   itself; the shim replaces it). n8n's custom-registry setting is licence-gated and is left alone.
 *
 * n8n's own HTTP calls (api.n8n.io for the package's status and the vetted list, the default registry for
 * its version check) go to HTTPS_PROXY = the local registry, which refuses them: n8n behaves as on a
 * machine without internet, and the test sees which hosts it tried.
 *
 * Plain Node (ESM), no test framework.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { installPaths, isInstalled, PROFILES } from '../../tools/n8n-install.mjs';
import { restClient, restSession, runCommand, startN8n } from '../e2e/n8n.mjs';

export const OWNER = { email: 'owner@example.com', password: 'Compat-Install-Password-1', firstName: 'Compat', lastName: 'Owner' };

/** The JavaScript entry of this machine's npm CLI (run with any Node binary). */
export function npmCliPath() {
	if (process.env.npm_execpath?.endsWith('.js')) return process.env.npm_execpath;
	const npm = execFileSync(process.platform === 'win32' ? 'where' : 'which', ['npm']).toString().trim().split('\n')[0];
	const real = fs.realpathSync(npm);
	const cli = real.endsWith('.js') ? real : path.join(path.dirname(real), 'npm-cli.js');
	if (!fs.existsSync(cli)) throw new Error(`npm's CLI script not found next to ${real}`);
	return cli;
}

/**
 * Node binaries on this machine by major version: this process's Node and those of the installed n8n
 * profiles (n8n-install.mjs puts Node 22 and 24 from the npm registry's `node-<platform>-<arch>`).
 * Returns Map(major → { bin, version, from }).
 */
export function nodeRuntimes() {
	const found = new Map([[process.versions.node.split('.')[0], { bin: process.execPath, version: process.versions.node, from: 'this machine' }]]);
	for (const name of Object.keys(PROFILES)) {
		const { profile, nodeBin } = installPaths(name);
		if (!profile.node || !isInstalled(name)) continue;
		const major = profile.node.split('.')[0];
		if (!found.has(major)) found.set(major, { bin: nodeBin, version: profile.node, from: `profile ${name}` });
	}
	return found;
}

export function tempDir(prefix) {
	return fs.mkdtempSync(path.join(os.tmpdir(), `imagepack-compat-${prefix}-`));
}

/** The package folders in a node_modules folder (`@scope/name` for scoped ones), sorted. */
export function listModules(nodeModules) {
	if (!fs.existsSync(nodeModules)) return [];
	const names = [];
	for (const entry of fs.readdirSync(nodeModules)) {
		if (entry.startsWith('.')) continue; // .package-lock.json, .bin
		if (entry.startsWith('@')) for (const inner of fs.readdirSync(path.join(nodeModules, entry))) names.push(`${entry}/${inner}`);
		else names.push(entry);
	}
	return names.sort();
}

/** Every package folder under `dir`, at any depth (a nested node_modules counts): paths relative to dir. */
export function findPackages(dir, name) {
	const hits = [];
	const walk = (folder) => {
		for (const entry of fs.readdirSync(folder, { withFileTypes: true })) {
			if (!entry.isDirectory()) continue;
			const full = path.join(folder, entry.name);
			if (path.basename(folder) === 'node_modules' && entry.name === name) hits.push(path.relative(dir, full));
			walk(full);
		}
	};
	if (fs.existsSync(dir)) walk(dir);
	return hits;
}

/**
 * The environment of a clean npm: the local registry, a fresh cache (so that every lookup reaches the
 * registry and is seen), no user config of this machine, no update check, no proxy.
 */
export function npmEnv({ registryUrl, cacheDir, userconfig }) {
	const env = { ...process.env };
	for (const key of Object.keys(env)) if (/^npm_/i.test(key) || /_proxy$/i.test(key)) delete env[key];
	return {
		...env,
		npm_config_registry: `${registryUrl}/`,
		npm_config_cache: cacheDir,
		npm_config_userconfig: userconfig,
		npm_config_update_notifier: 'false',
	};
}

/**
 * The README's by-hand install: `npm install <name>` in `<dir>/.n8n/nodes` (created empty, as the README's
 * `mkdir -p` does), with this machine's npm CLI run by `nodeBin`. Returns { code, ms, stdout, stderr,
 * nodesDir, modules, requests } where `requests` are the registry requests made by this install.
 */
export async function installByHand({ registry, nodeBin, dir, packageName = registry.name }) {
	const nodesDir = path.join(dir, '.n8n', 'nodes');
	fs.mkdirSync(nodesDir, { recursive: true });
	const userconfig = path.join(dir, 'npmrc');
	fs.writeFileSync(userconfig, '');
	const before = registry.requests.length;
	const result = await runCommand(nodeBin, [npmCliPath(), 'install', packageName], {
		cwd: nodesDir,
		env: npmEnv({ registryUrl: registry.url, cacheDir: path.join(dir, 'npm-cache'), userconfig }),
		timeoutMs: 5 * 60_000,
	});
	return {
		...result,
		nodesDir,
		modules: listModules(path.join(nodesDir, 'node_modules')),
		requests: registry.requests.slice(before),
	};
}

/**
 * Writes an `npm` shim into `<dir>/bin` and returns { binDir, logFile, calls() }. The shim logs each call
 * (working folder and arguments as n8n passed them), replaces any `--registry` by the local registry, and
 * runs this machine's npm CLI with `nodeBin` in a clean npm environment (see npmEnv).
 */
export function writeNpmShim({ dir, registryUrl, nodeBin }) {
	const binDir = path.join(dir, 'bin');
	fs.mkdirSync(binDir, { recursive: true });
	const logFile = path.join(dir, 'npm-calls.log');
	const userconfig = path.join(dir, 'npmrc');
	fs.writeFileSync(userconfig, '');
	const values = { logFile, registryUrl, cache: path.join(dir, 'npm-cache'), userconfig, nodeBin, cli: npmCliPath() };
	for (const [key, value] of Object.entries(values)) if (value.includes("'")) throw new Error(`npm shim: ${key} contains a quote: ${value}`);
	const script = `#!/bin/sh
# npm for n8n under test: every --registry is replaced by the local test registry.
printf '%s\\t%s\\n' "$PWD" "$*" >> '${logFile}'
registry='${registryUrl}'
value=
for arg do
	shift
	if [ -n "$value" ]; then value=; set -- "$@" "$registry"; continue; fi
	case "$arg" in
		--registry=*) set -- "$@" "--registry=$registry" ;;
		--registry) value=1; set -- "$@" "$arg" ;;
		*) set -- "$@" "$arg" ;;
	esac
done
unset HTTPS_PROXY https_proxy HTTP_PROXY http_proxy
export npm_config_registry="$registry/" npm_config_cache='${values.cache}' npm_config_userconfig='${userconfig}' npm_config_update_notifier=false
exec '${nodeBin}' '${values.cli}' "$@"
`;
	fs.writeFileSync(path.join(binDir, 'npm'), script, { mode: 0o755 });
	return {
		binDir,
		logFile,
		/** The calls so far: { cwd, args } (args as one string, as n8n passed them). */
		calls: () =>
			fs.existsSync(logFile)
				? fs
						.readFileSync(logFile, 'utf8')
						.split('\n')
						.filter(Boolean)
						.map((line) => {
							const [cwd, args] = line.split('\t');
							return { cwd, args };
						})
				: [],
	};
}

/**
 * The environment for an n8n that installs through the shim: PATH with the shim first, and HTTPS_PROXY
 * at the local registry (which refuses: no internet for n8n's own calls).
 */
export function shimmedN8nEnv({ shim, registry }) {
	return {
		PATH: `${shim.binDir}${path.delimiter}${process.env.PATH}`,
		HTTPS_PROXY: registry.url,
		https_proxy: registry.url,
		NO_PROXY: '127.0.0.1,localhost',
		no_proxy: '127.0.0.1,localhost',
		N8N_SECURE_COOKIE: 'false',
	};
}

/**
 * Creates the owner through the setup screen's REST call (`POST /rest/owner/setup`: n8n 1.x and 2.0 have
 * no owner from the environment), then logs in. Returns the logged-in client.
 */
export async function setupOwnerAndLogin(url, owner = OWNER) {
	const setup = await restClient(url).post('/rest/owner/setup', owner);
	if (setup.status !== 200) throw new Error(`POST /rest/owner/setup: HTTP ${setup.status} ${JSON.stringify(setup.body)}`);
	return await restSession(url, owner);
}

/** The node type names n8n serves to its editor (`GET /types/nodes.json`; 2.x wants a session). */
export async function servedNodeTypes(client) {
	const answer = await client.get('/types/nodes.json');
	if (answer.status !== 200 || !Array.isArray(answer.body)) throw new Error(`GET /types/nodes.json: HTTP ${answer.status}`);
	return new Set(answer.body.map((type) => type.name));
}

/** n8n's REST answers are `{ data }`; returns data, or throws with the answer. */
export function restData(answer, what) {
	if (answer.status >= 300) throw new Error(`${what}: HTTP ${answer.status} ${JSON.stringify(answer.body)}`);
	return answer.body?.data ?? answer.body;
}

/**
 * Starts n8n (startN8n) with a longer ready timeout (other sessions share this 2-core machine), then waits
 * for its REST API: n8n 1.x answers /healthz/readiness before its REST controllers are mounted.
 */
export async function startCompatN8n(options) {
	const n8n = await startN8n({ readyTimeoutMs: 300_000, ...options });
	const started = Date.now();
	for (;;) {
		try {
			const response = await fetch(`${n8n.url}/rest/settings`);
			if (response.ok && String(response.headers.get('content-type')).includes('json')) return n8n;
		} catch {}
		if (Date.now() - started > 120_000) {
			await n8n.stop();
			throw new Error(`n8n answered /healthz/readiness but not /rest/settings within 120 s:\n${n8n.logs().slice(-3000)}`);
		}
		await new Promise((resolve) => setTimeout(resolve, 250));
	}
}

export function elapsed(started) {
	return `${((Date.now() - started) / 1000).toFixed(1)} s`;
}
