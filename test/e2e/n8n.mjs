/**
 * Helpers to run the packed package in a real, pinned n8n (see tools/n8n-install.mjs): pack, make an n8n user
 * folder with the package installed the way n8n installs community packages, run the n8n CLI, import
 * credentials and workflows, execute workflows headless, and start an n8n server.
 *
 * Everything is plain Node (ESM): no test framework, so the sandbox uses the same functions.
 */
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { ensureN8n, installPaths } from '../../tools/n8n-install.mjs';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const PACKAGE_NAME = 'n8n-nodes-imagepack';
/** The importable example workflows (top-level examples/, linked from the README); the e2e suite runs them. */
export const EXAMPLES_DIR = path.join(REPO_ROOT, 'examples');

/** Where the test keeps its temporary folders (removed by `cleanup()` unless KEEP_E2E is set). */
function tempDir(prefix) {
	return fs.mkdtempSync(path.join(os.tmpdir(), `imagepack-${prefix}-`));
}

function log(message) {
	if (process.env.E2E_QUIET) return;
	process.stderr.write(`[e2e] ${message}\n`);
}

/**
 * Runs a command and collects its output. Rejects only if it cannot be started or times out;
 * the caller looks at `code`.
 */
export function runCommand(command, args, { cwd = REPO_ROOT, env = process.env, timeoutMs = 10 * 60_000, echo = false, input } = {}) {
	return new Promise((resolve, reject) => {
		const started = Date.now();
		const child = spawn(command, args, { cwd, env, stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
		let stdout = '';
		let stderr = '';
		child.stdout.on('data', (chunk) => {
			stdout += chunk;
			if (echo) process.stderr.write(chunk);
		});
		child.stderr.on('data', (chunk) => {
			stderr += chunk;
			if (echo) process.stderr.write(chunk);
		});
		if (input !== undefined) child.stdin.end(input);
		const timer = setTimeout(() => {
			child.kill('SIGKILL');
			reject(new Error(`${command} ${args.join(' ')} timed out after ${timeoutMs} ms\n${stdout}\n${stderr}`));
		}, timeoutMs);
		child.on('error', (error) => {
			clearTimeout(timer);
			reject(error);
		});
		child.on('close', (code, signal) => {
			clearTimeout(timer);
			resolve({ code: code ?? signal, stdout, stderr, ms: Date.now() - started });
		});
	});
}

/** `npm run build` (unless build is false), then `npm pack` into a temp folder. Returns the tarball path. */
export async function packPackage({ build = true, cwd = REPO_ROOT } = {}) {
	const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
	if (build) {
		log('npm run build…');
		const result = await runCommand(npm, ['run', 'build'], { cwd });
		if (result.code !== 0) throw new Error(`npm run build failed (${result.code}):\n${result.stdout}\n${result.stderr}`);
	}
	const destination = tempDir('pack');
	const result = await runCommand(npm, ['pack', '--json', '--pack-destination', destination, '--ignore-scripts'], { cwd });
	if (result.code !== 0) throw new Error(`npm pack failed (${result.code}):\n${result.stdout}\n${result.stderr}`);
	const [info] = JSON.parse(result.stdout.slice(result.stdout.indexOf('[')));
	const tarball = path.join(destination, info.filename);
	log(`packed ${info.name}@${info.version}: ${info.entryCount} files, ${info.size} bytes → ${tarball}`);
	return tarball;
}

/**
 * A fresh N8N_USER_FOLDER with the tarball installed as n8n installs a community package: unpacked into
 * `<folder>/.n8n/nodes/node_modules/<name>`, listed in `<folder>/.n8n/nodes/package.json`.
 * Returns { dir, n8nDir, packageDir, cleanup }.
 */
export async function createUserFolder({ tarball, dir = tempDir('n8n-user') } = {}) {
	const n8nDir = path.join(dir, '.n8n');
	const nodesDir = path.join(n8nDir, 'nodes');
	fs.mkdirSync(path.join(nodesDir, 'node_modules'), { recursive: true });
	const dependencies = {};
	let packageDir = null;
	if (tarball) {
		const unpack = tempDir('unpack');
		const result = await runCommand('tar', ['-xzf', tarball, '-C', unpack]);
		if (result.code !== 0) throw new Error(`tar failed: ${result.stderr}`);
		const manifest = JSON.parse(fs.readFileSync(path.join(unpack, 'package', 'package.json'), 'utf8'));
		packageDir = path.join(nodesDir, 'node_modules', manifest.name);
		fs.mkdirSync(path.dirname(packageDir), { recursive: true });
		fs.renameSync(path.join(unpack, 'package'), packageDir);
		fs.rmSync(unpack, { recursive: true, force: true });
		dependencies[manifest.name] = manifest.version;
	}
	fs.writeFileSync(
		path.join(nodesDir, 'package.json'),
		JSON.stringify({ name: 'installed-nodes', private: true, dependencies }, null, 2) + '\n',
	);
	return {
		dir,
		n8nDir,
		packageDir,
		cleanup() {
			if (!process.env.KEEP_E2E) fs.rmSync(dir, { recursive: true, force: true });
		},
	};
}

/** The environment n8n runs with in the tests and the sandbox. */
export function n8nEnv(userFolder, extra = {}) {
	const env = { ...process.env };
	// Nothing from a surrounding `npm run` or from the developer's own n8n setup leaks in.
	for (const key of Object.keys(env)) if (key.startsWith('npm_') || key.startsWith('N8N_') || key.startsWith('DB_')) delete env[key];
	return {
		...env,
		N8N_USER_FOLDER: userFolder,
		DB_TYPE: 'sqlite',
		N8N_DIAGNOSTICS_ENABLED: 'false',
		N8N_VERSION_NOTIFICATIONS_ENABLED: 'false',
		N8N_TEMPLATES_ENABLED: 'false',
		N8N_PERSONALIZATION_ENABLED: 'false',
		N8N_HIRING_BANNER_ENABLED: 'false',
		N8N_ENFORCE_SETTINGS_FILE_PERMISSIONS: 'false',
		N8N_COMMUNITY_PACKAGES_ENABLED: 'true',
		N8N_LOG_LEVEL: 'warn',
		N8N_NO_COLOR: 'true',
		NO_COLOR: '1',
		...extra,
	};
}

/**
 * Runs `n8n <args>` of the pinned install (installing it first if missing) with Node 24.
 * Returns { code, stdout, stderr, ms }.
 */
export async function n8nCli(args, { userFolder, env = {}, profile = 'default', timeoutMs = 5 * 60_000, echo = false } = {}) {
	if (!userFolder) throw new Error('n8nCli needs a userFolder');
	const paths = await ensureN8n(profile);
	return runCommand(paths.nodeBin, [paths.n8nBin, ...args], {
		cwd: userFolder,
		// Commands that run workflows start a task-runner broker: give each its own port.
		env: n8nEnv(userFolder, { N8N_RUNNERS_BROKER_PORT: String(await freePort()), ...paths.profile.env, ...env }),
		timeoutMs,
		echo,
	});
}

async function n8nCliOk(args, options) {
	const result = await n8nCli(args, options);
	if (result.code !== 0) {
		throw new Error(`n8n ${args.join(' ')} exited with ${result.code} after ${result.ms} ms\n--- stdout\n${result.stdout}\n--- stderr\n${result.stderr}`);
	}
	return result;
}

function writeTempJson(userFolder, name, value) {
	const file = path.join(userFolder, `${name}-${Date.now()}-${Math.random().toString(36).slice(2)}.json`);
	fs.writeFileSync(file, JSON.stringify(value, null, 2));
	return file;
}

/**
 * Imports credentials: one object or an array of { id, name, type, data } (data in plain text; n8n
 * encrypts it with the user folder's key).
 */
export async function importCredential(userFolder, credentials, options = {}) {
	const list = Array.isArray(credentials) ? credentials : [credentials];
	const file = writeTempJson(userFolder, 'credentials', list);
	const result = await n8nCliOk(['import:credentials', `--input=${file}`], { ...options, userFolder });
	fs.rmSync(file, { force: true });
	return result;
}

/**
 * Imports a workflow (object with an explicit `id`, or a path to a JSON file), or an array of them in
 * one `n8n import:workflow` call (each CLI start costs seconds).
 */
export async function importWorkflow(userFolder, workflow, options = {}) {
	const read = (w) => (typeof w === 'string' ? JSON.parse(fs.readFileSync(w, 'utf8')) : w);
	const value = Array.isArray(workflow) ? workflow.map(read) : read(workflow);
	for (const one of [value].flat()) if (!one.id) throw new Error(`importWorkflow: "${one.name}" needs an explicit id`);
	const file = writeTempJson(userFolder, 'workflow', value);
	const result = await n8nCliOk(['import:workflow', `--input=${file}`], { ...options, userFolder });
	fs.rmSync(file, { force: true });
	return result;
}

/**
 * Extracts the run that `n8n execute` prints through its logger at level info: `JSON.stringify(run, null, 2)`,
 * i.e. a line `{` up to the next line `}` (other log lines come before and after it). On success the
 * whole IRun is printed; on failure too (after "Execution was NOT successful"). Returns the IRun or null.
 */
export function parseRunOutput(stdout) {
	const lines = stdout.split('\n');
	for (let start = lines.indexOf('{'); start >= 0; start = lines.indexOf('{', start + 1)) {
		const end = lines.indexOf('}', start + 1);
		if (end < 0) break;
		try {
			return JSON.parse(lines.slice(start, end + 1).join('\n'));
		} catch {}
	}
	return null;
}

/**
 * `n8n execute --id=<id> --rawOutput`: runs the workflow from its Manual Trigger (mode `cli`). Returns
 * { code, ok, run, resultData, error, stdout, stderr, ms, nodeRuns(name), nodeOutput(name, output?),
 * nodeError(name) }, where `run` is the IRun n8n printed (null if none) and `ok` means a finished, successful
 * run without a workflow error. n8n prints the run only at log level info, so that is the level used here.
 */
export async function executeWorkflow(userFolder, id, options = {}) {
	const result = await n8nCli(['execute', `--id=${id}`, '--rawOutput'], {
		...options,
		env: { N8N_LOG_LEVEL: 'info', ...options.env },
		userFolder,
	});
	const run = parseRunOutput(result.stdout);
	const resultData = run?.data?.resultData;
	const runsOf = (name) => resultData?.runData?.[name] ?? [];
	// The printed run is the verdict: under load n8n's CLI was once seen exiting non-zero after printing a
	// finished, successful run (cause not found; its task runner registered after the run ended).
	const succeeded = run?.status === 'success' && run?.finished === true && !resultData?.error;
	return {
		...result,
		ok: succeeded || (result.code === 0 && !!run && !resultData?.error),
		run,
		resultData,
		error: resultData?.error,
		nodeRuns: runsOf,
		nodeOutput: (name, output = 0) => runsOf(name).at(-1)?.data?.main?.[output] ?? [],
		nodeError: (name) => runsOf(name).at(-1)?.error,
	};
}

/**
 * Marks a workflow as published (n8n 2.x's word for active) in the database: `n8n publish:workflow`
 * (n8n 1.x: `n8n update:workflow --active=true`). A running n8n does not notice; the workflow is
 * activated when n8n (re)starts.
 */
export async function publishWorkflow(userFolder, id, options = {}) {
	const v1 = installPaths(options.profile).profile.n8n.startsWith('1.');
	const args = v1 ? ['update:workflow', `--id=${id}`, '--active=true'] : ['publish:workflow', `--id=${id}`];
	return n8nCliOk(args, { ...options, userFolder });
}

/**
 * Runs SQL against the user folder's n8n database (`.n8n/database.sqlite`) with the sqlite3 driver of the
 * pinned n8n, under its Node (works while n8n runs: sqlite allows readers beside the writer).
 * Returns the rows.
 */
export async function querySqlite(userFolder, sql, params = [], { profile = 'default' } = {}) {
	const paths = await ensureN8n(profile);
	const script = `
		const sqlite3 = require('sqlite3');
		const [file, sql, params] = JSON.parse(process.argv[1]);
		const db = new sqlite3.Database(file, sqlite3.OPEN_READWRITE, (error) => {
			if (error) { console.error(error.message); process.exit(2); }
			db.configure('busyTimeout', 10000);
			db.all(sql, params, (error, rows) => {
				if (error) { console.error(error.message); process.exit(3); }
				process.stdout.write(JSON.stringify(rows));
				db.close();
			});
		});`;
	const file = path.join(userFolder, '.n8n', 'database.sqlite');
	const result = await runCommand(paths.nodeBin, ['-e', script, JSON.stringify([file, sql, params])], {
		cwd: paths.dir,
		timeoutMs: 60_000,
	});
	if (result.code !== 0) throw new Error(`sqlite query failed (${result.code}): ${result.stderr}\n${sql}`);
	return JSON.parse(result.stdout);
}

/** The workflow's static data as n8n saved it (null when none). */
export async function readStaticData(userFolder, workflowId, options) {
	const [row] = await querySqlite(userFolder, 'SELECT staticData FROM workflow_entity WHERE id = ?', [workflowId], options);
	if (!row) throw new Error(`No workflow ${workflowId}`);
	return row.staticData ? JSON.parse(row.staticData) : null;
}

/**
 * The workflow's finished executions, oldest first: { id, mode, status, startedAt, stoppedAt, run } where
 * `run` is the IRun-like { resultData, ... } (n8n stores it "flatted"; parsed with n8n's own flatted).
 */
export async function readExecutions(userFolder, workflowId, options = {}) {
	const rows = await querySqlite(
		userFolder,
		`SELECT e.id, e.mode, e.status, e.startedAt, e.stoppedAt, d.data
		   FROM execution_entity e LEFT JOIN execution_data d ON d.executionId = e.id
		  WHERE e.workflowId = ? ORDER BY e.id`,
		[workflowId],
		options,
	);
	return withRunData(rows, options);
}

/**
 * Execution rows with their `data` column (the run, stored "flatted") parsed with n8n's own flatted:
 * { ...row, run, nodeOutput(name, output?) }. Works for rows read from SQLite or PostgreSQL.
 */
export function withRunData(rows, { profile } = {}) {
	const paths = installPaths(profile);
	const { parse } = createRequire(path.join(paths.dir, 'package.json'))('flatted');
	return rows.map(({ data, ...row }) => {
		const run = data ? parse(data) : null;
		const runData = run?.resultData?.runData ?? {};
		return {
			...row,
			run,
			nodeOutput: (name, output = 0) => runData[name]?.at(-1)?.data?.main?.[output] ?? [],
		};
	});
}

/** Statuses after which n8n no longer changes an execution ('new', 'running' and 'waiting' still do). */
const FINAL_STATUSES = new Set(['success', 'error', 'canceled', 'crashed']);

/** Whether n8n is done with an execution: final status, stop time and run data saved. */
export const isFinished = (execution) =>
	FINAL_STATUSES.has(execution.status) && execution.stoppedAt != null && execution.run?.resultData != null;

/**
 * Waits until the workflow has at least `count` executions and every one of them is finished, then
 * returns them (as readExecutions). A test that reads an execution n8n is still writing sees an empty
 * output, so tests wait for this instead of for the first row.
 */
export async function waitForFinishedExecutions(userFolder, workflowId, count, { timeoutMs = 150_000, profile } = {}) {
	const started = Date.now();
	for (;;) {
		const executions = await readExecutions(userFolder, workflowId, { profile });
		if (executions.length >= count && executions.every(isFinished)) return executions;
		if (Date.now() - started > timeoutMs) {
			const states = executions.map((e) => `${e.id}:${e.status}${e.stoppedAt == null ? '(not stopped)' : ''}`);
			throw new Error(
				`Timed out after ${timeoutMs} ms waiting for ${count} finished executions of ${workflowId}; saw [${states.join(', ')}]`,
			);
		}
		await new Promise((resolve) => setTimeout(resolve, 500));
	}
}

/**
 * The bytes of a binary in an execution's output. n8n 2.x keeps binaries on disk ("filesystem-v2":
 * `<user folder>/.n8n/storage/<path from the id>`, in `.n8n/binaryData` up to 2.0.x at least);
 * inline base64 data is decoded as is.
 */
export function readBinary(userFolder, binary) {
	if (binary.id) {
		const [mode, ...rest] = binary.id.split(':');
		if (!mode.startsWith('filesystem')) throw new Error(`readBinary: unsupported binary data mode ${mode}`);
		const [file, older] = ['storage', 'binaryData'].map((folder) => path.join(userFolder, '.n8n', folder, rest.join(':')));
		return fs.readFileSync(fs.existsSync(file) || !fs.existsSync(older) ? file : older);
	}
	return Buffer.from(binary.data, 'base64');
}

/**
 * The environment that makes n8n create its owner account at start (N8N_INSTANCE_OWNER_MANAGED_BY_ENV),
 * with the password hashed by n8n's own bcrypt (from the pinned install).
 */
export function ownerEnv({ email, password, firstName = 'Test', lastName = 'Owner' }, { profile } = {}) {
	const bcrypt = createRequire(path.join(installPaths(profile).dir, 'package.json'))('bcryptjs');
	return {
		N8N_INSTANCE_OWNER_MANAGED_BY_ENV: 'true',
		N8N_INSTANCE_OWNER_EMAIL: email,
		N8N_INSTANCE_OWNER_FIRST_NAME: firstName,
		N8N_INSTANCE_OWNER_LAST_NAME: lastName,
		N8N_INSTANCE_OWNER_PASSWORD_HASH: bcrypt.hashSync(password, 10),
	};
}

/**
 * n8n's REST API over plain http, with the cookies its answers set sent along (as a browser would):
 * { request(method, path, body?), get(path), post(path, body) }, each resolving to { status, headers,
 * body } (parsed JSON, else a Buffer).
 */
export function restClient(url) {
	const cookies = new Map();
	async function request(method, route, body) {
		const response = await fetch(`${url}${route}`, {
			method,
			headers: {
				cookie: [...cookies].map(([name, value]) => `${name}=${value}`).join('; '),
				...(body === undefined ? {} : { 'content-type': 'application/json' }),
			},
			body: body === undefined ? undefined : JSON.stringify(body),
		});
		for (const set of response.headers.getSetCookie()) {
			const [pair] = set.split(';');
			const at = pair.indexOf('=');
			cookies.set(pair.slice(0, at).trim(), pair.slice(at + 1));
		}
		const bytes = Buffer.from(await response.arrayBuffer());
		const json = String(response.headers.get('content-type')).includes('json');
		return { status: response.status, headers: response.headers, body: json ? JSON.parse(bytes.toString('utf8')) : bytes };
	}
	return { request, get: (route) => request('GET', route), post: (route, body = {}) => request('POST', route, body) };
}

/**
 * A restClient logged in (`POST /rest/login`; n8n must run with N8N_SECURE_COOKIE=false over plain
 * http): the same login from n8n 1.100 to 2.41.
 */
export async function restSession(url, { email, password }) {
	const client = restClient(url);
	const login = await client.post('/rest/login', { emailOrLdapLoginId: email, password });
	if (login.status !== 200) throw new Error(`n8n login as ${email} failed (${login.status}): ${JSON.stringify(login.body)}`);
	return client;
}

/** Ports handed out by freePort(): processes started side by side must not get the same one. */
const handedOut = new Set();

/** A free TCP port on localhost, never one this process handed out before. */
export async function freePort() {
	for (;;) {
		const port = await new Promise((resolve, reject) => {
			const server = net.createServer();
			server.unref();
			server.on('error', reject);
			server.listen(0, '127.0.0.1', () => {
				const { port } = server.address();
				server.close(() => resolve(port));
			});
		});
		if (!handedOut.has(port)) {
			handedOut.add(port);
			return port;
		}
	}
}

/**
 * Starts `n8n start` on a port (free one by default) and waits for /healthz. Returns
 * { url, port, process, logs(), stop() }. stop() sends SIGTERM, then SIGKILL after a grace period.
 */
export async function startN8n({ userFolder, port, env = {}, profile = 'default', readyTimeoutMs = 120_000, echo = false, command = 'start', args = [] } = {}) {
	if (!userFolder) throw new Error('startN8n needs a userFolder');
	const paths = await ensureN8n(profile);
	port ??= await freePort();
	const url = `http://127.0.0.1:${port}`;
	const child = spawn(paths.nodeBin, [paths.n8nBin, command, ...args], {
		cwd: userFolder,
		env: n8nEnv(userFolder, {
			N8N_PORT: String(port),
			N8N_LISTEN_ADDRESS: '127.0.0.1',
			N8N_HOST: 'localhost',
			N8N_LOG_LEVEL: 'info',
			// A separate port for the task runners' broker, so that two instances don't collide.
			N8N_RUNNERS_BROKER_PORT: String(await freePort()),
			...paths.profile.env,
			...env,
		}),
		stdio: ['ignore', 'pipe', 'pipe'],
		detached: process.platform !== 'win32',
	});
	let output = '';
	const onData = (chunk) => {
		output += chunk;
		if (echo) process.stderr.write(chunk);
	};
	child.stdout.on('data', onData);
	child.stderr.on('data', onData);
	let exited = null;
	const exitPromise = new Promise((resolve) => child.on('exit', (code, signal) => resolve((exited = code ?? signal))));

	const started = Date.now();
	for (;;) {
		if (exited !== null) throw new Error(`n8n ${command} exited with ${exited} before it was ready:\n${output}`);
		if (Date.now() - started > readyTimeoutMs) {
			killTree(child, 'SIGKILL');
			throw new Error(`n8n did not answer /healthz within ${readyTimeoutMs} ms:\n${output}`);
		}
		try {
			const response = await fetch(`${url}/healthz/readiness`);
			if (response.ok) break;
		} catch {}
		await new Promise((resolve) => setTimeout(resolve, 250));
	}
	log(`n8n ${command} ready at ${url} after ${Date.now() - started} ms`);
	return {
		url,
		port,
		process: child,
		logs: () => output,
		async stop({ graceMs = 20_000 } = {}) {
			if (exited !== null) return exited;
			killTree(child, 'SIGTERM');
			const timer = setTimeout(() => killTree(child, 'SIGKILL'), graceMs);
			const code = await exitPromise;
			clearTimeout(timer);
			return code;
		},
		/** SIGKILL, no shutdown: what a crash or an OOM kill does. Resolves once it has exited. */
		async kill() {
			if (exited !== null) return exited;
			killTree(child, 'SIGKILL');
			return exitPromise;
		},
	};
}

/**
 * Starts `n8n worker` (queue mode: the environment must name the Redis and the shared database) and
 * waits for its health server's /healthz/readiness (database connected and migrated, Redis connected).
 * `port` is the worker's health server port (a free one by default). Same result as startN8n().
 */
export async function startN8nWorker({ port, env = {}, concurrency = 10, ...options } = {}) {
	port ??= await freePort();
	return startN8n({
		...options,
		port,
		command: 'worker',
		args: [`--concurrency=${concurrency}`],
		env: { QUEUE_HEALTH_CHECK_ACTIVE: 'true', QUEUE_HEALTH_CHECK_PORT: String(port), N8N_WORKER_SERVER_ADDRESS: '127.0.0.1', ...env },
	});
}

function killTree(child, signal) {
	try {
		if (process.platform !== 'win32') process.kill(-child.pid, signal);
		else child.kill(signal);
	} catch {
		try {
			child.kill(signal);
		} catch {}
	}
}

export { ensureN8n, installPaths };
