/**
 * The servers n8n's queue mode needs besides n8n: a PostgreSQL server and a Redis server, each started as
 * a child process on a free localhost port with its data in a temporary folder, and stopped afterwards.
 *
 * Binaries come from the machine (Debian's `postgresql` and `redis-server` packages). When one is missing
 * and we run as root, `ensureQueueServices()` installs it with apt-get; otherwise it says what to install.
 *
 * PostgreSQL refuses to run as root. As root, initdb and postgres run as the unprivileged `postgres`
 * system user that Debian's package creates (else `nobody`), through spawn's uid/gid options: no sudo,
 * su or runuser needed, and the same code runs as any other user unchanged.
 *
 * `aptInstall()` and `which()` also serve the editor suite (Chromium and a CJK font).
 *
 * Plain Node (ESM), no test framework: the bench uses it too.
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

import { freePort } from './n8n.mjs';

export const isRoot = () => process.getuid?.() === 0;
const log = (message) => process.env.E2E_QUIET || process.stderr.write(`[services] ${message}\n`);

/** The absolute path of `command` on PATH (or in the extra folders), or null. */
export function which(command, extraDirs = []) {
	for (const dir of [...(process.env.PATH ?? '').split(path.delimiter), ...extraDirs]) {
		const candidate = path.join(dir, command);
		try {
			fs.accessSync(candidate, fs.constants.X_OK);
			return candidate;
		} catch {}
	}
	return null;
}

/** Debian keeps each PostgreSQL version's binaries in /usr/lib/postgresql/<version>/bin (newest first). */
function postgresBinDirs() {
	const root = '/usr/lib/postgresql';
	if (!fs.existsSync(root)) return [];
	return fs
		.readdirSync(root)
		.filter((version) => /^\d+$/.test(version))
		.sort((a, b) => Number(b) - Number(a))
		.map((version) => path.join(root, version, 'bin'));
}

/** { initdb, postgres } from PATH or Debian's folder, or null when PostgreSQL is not installed. */
export function findPostgres() {
	const dirs = postgresBinDirs();
	const initdb = which('initdb', dirs);
	const postgres = initdb && which('postgres', [path.dirname(initdb), ...dirs]);
	return initdb && postgres ? { initdb, postgres } : null;
}

export function findRedis() {
	const server = which('redis-server', ['/usr/bin', '/usr/sbin']);
	return server ? { server } : null;
}

/** Installs Debian packages (as root); when that fails, `apt-get update` and once more (a fresh machine has no lists). */
export function aptInstall(packages) {
	const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
	const install = () => execFileSync('apt-get', ['install', '-y', '--no-install-recommends', ...packages], { env, stdio: ['ignore', 'ignore', 'pipe'] });
	log(`installing ${packages.join(' ')} with apt-get…`);
	try {
		install();
	} catch {
		// A fresh machine may have no package lists yet.
		execFileSync('apt-get', ['update'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
		install();
	}
}

/**
 * Makes sure PostgreSQL and Redis can be started: installs what is missing when root (Debian's packages;
 * the PostgreSQL package is told not to create and start its own cluster), else reports what is missing.
 * Returns { ok: true, postgres, redis } or { ok: false, reason } (one line, saying what to install).
 */
export function ensureQueueServices() {
	let postgres = findPostgres();
	let redis = findRedis();
	const missing = [!postgres && 'postgresql', !redis && 'redis-server'].filter(Boolean);
	if (missing.length && isRoot() && which('apt-get')) {
		try {
			if (!postgres) {
				// Debian's postinst would otherwise create a "main" cluster and start it on port 5432.
				fs.mkdirSync('/etc/postgresql-common', { recursive: true });
				const conf = '/etc/postgresql-common/createcluster.conf';
				if (!fs.existsSync(conf)) fs.writeFileSync(conf, 'create_main_cluster = false\n');
			}
			aptInstall(missing);
		} catch (error) {
			return { ok: false, reason: `apt-get install ${missing.join(' ')} failed: ${String(error.stderr ?? error.message).trim().split('\n').pop()}` };
		}
		postgres = findPostgres();
		redis = findRedis();
	}
	const still = [!postgres && 'postgresql', !redis && 'redis-server'].filter(Boolean);
	if (still.length) {
		return {
			ok: false,
			reason: `queue mode needs ${still.join(' and ')} (not found; install with: sudo apt-get install ${still.join(' ')}, or run as root to let the suite install it)`,
		};
	}
	return { ok: true, postgres, redis };
}

/** The unprivileged account PostgreSQL runs as when we are root: { uid, gid, name }, else null. */
function postgresAccount() {
	if (!isRoot()) return null;
	for (const name of ['postgres', 'nobody']) {
		try {
			const uid = Number(execFileSync('id', ['-u', name]).toString().trim());
			const gid = Number(execFileSync('id', ['-g', name]).toString().trim());
			return { uid, gid, name };
		} catch {}
	}
	throw new Error('Running as root and neither a "postgres" nor a "nobody" account exists to run PostgreSQL as');
}

/**
 * Spawns a server, collects its output, and resolves once `ready(output)` is true (or rejects when it
 * exits first or after the timeout). Returns { process, logs(), stop() }; stop() sends SIGTERM (SIGKILL
 * after a grace period) and resolves when it has exited.
 */
async function startServer(name, command, args, { spawnOptions = {}, ready, readyTimeoutMs = 60_000 } = {}) {
	const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], ...spawnOptions });
	let output = '';
	const onData = (chunk) => {
		output += chunk;
		if (process.env.E2E_ECHO) process.stderr.write(`[${name}] ${chunk}`);
	};
	child.stdout.on('data', onData);
	child.stderr.on('data', onData);
	let exited = null;
	const exit = new Promise((resolve) => child.on('exit', (code, signal) => resolve((exited = code ?? signal))));
	child.on('error', (error) => (output += `\n${error.message}`));
	const started = Date.now();
	for (;;) {
		if (exited !== null) throw new Error(`${name} exited with ${exited} before it was ready:\n${output}`);
		if (await ready(output)) break;
		if (Date.now() - started > readyTimeoutMs) {
			child.kill('SIGKILL');
			throw new Error(`${name} was not ready within ${readyTimeoutMs} ms:\n${output}`);
		}
		await new Promise((resolve) => setTimeout(resolve, 100));
	}
	log(`${name} ready after ${Date.now() - started} ms (pid ${child.pid})`);
	return {
		process: child,
		logs: () => output,
		async stop({ graceMs = 10_000 } = {}) {
			if (exited !== null) return exited;
			child.kill('SIGTERM');
			const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
			const code = await exit;
			clearTimeout(timer);
			return code;
		},
	};
}

function tempFolder(prefix) {
	return fs.mkdtempSync(path.join(os.tmpdir(), `imagepack-${prefix}-`));
}

function removeFolder(dir) {
	if (!process.env.KEEP_E2E) fs.rmSync(dir, { recursive: true, force: true });
}

/**
 * A fresh PostgreSQL cluster (initdb) in a temporary folder, listening on 127.0.0.1 only, with password
 * authentication for the `postgres` user and an empty database `n8n`. Durability is off (fsync,
 * synchronous_commit): the data is thrown away afterwards and the machine is shared.
 * Returns { host, port, user, password, database, url, env (n8n's DB_* variables), logs(), stop() }.
 */
export async function startPostgres({ binaries = findPostgres(), port } = {}) {
	if (!binaries) throw new Error('PostgreSQL is not installed (see ensureQueueServices())');
	port ??= await freePort();
	const dir = tempFolder('postgres');
	const data = path.join(dir, 'data');
	const user = 'postgres';
	const password = randomBytes(12).toString('hex');
	const database = 'n8n';
	fs.writeFileSync(path.join(dir, 'password'), `${password}\n`);
	const account = postgresAccount();
	if (account) execFileSync('chown', ['-R', `${account.uid}:${account.gid}`, dir]);
	const asAccount = account ? { uid: account.uid, gid: account.gid, env: { ...process.env, HOME: dir } } : {};

	const init = await new Promise((resolve) => {
		const child = spawn(
			binaries.initdb,
			['-D', data, '-U', user, '--pwfile', path.join(dir, 'password'), '--auth', 'scram-sha-256', '-E', 'UTF8', '--no-locale', '--no-sync'],
			{ stdio: ['ignore', 'pipe', 'pipe'], ...asAccount },
		);
		let output = '';
		child.stdout.on('data', (chunk) => (output += chunk));
		child.stderr.on('data', (chunk) => (output += chunk));
		child.on('error', (error) => resolve({ code: -1, output: error.message }));
		child.on('exit', (code) => resolve({ code, output }));
	});
	if (init.code !== 0) {
		removeFolder(dir);
		throw new Error(`initdb failed (${init.code})${account ? ` as ${account.name}` : ''}:\n${init.output}`);
	}

	const server = await startServer(
		'postgres',
		binaries.postgres,
		[
			'-D', data,
			'-p', String(port),
			'-c', 'listen_addresses=127.0.0.1',
			'-c', `unix_socket_directories=${dir}`,
			'-c', 'fsync=off',
			'-c', 'synchronous_commit=off',
			'-c', 'full_page_writes=off',
			'-c', 'max_connections=60',
		],
		{ spawnOptions: asAccount, ready: (output) => output.includes('ready to accept connections') },
	).catch((error) => {
		removeFolder(dir);
		throw error;
	});
	const connection = { host: '127.0.0.1', port, user, password };
	try {
		await withPgClient({ ...connection, database: 'postgres' }, (client) => client.query(`CREATE DATABASE ${database}`));
	} catch (error) {
		await server.stop();
		removeFolder(dir);
		throw error;
	}
	return {
		...connection,
		database,
		url: `postgres://${user}:${password}@127.0.0.1:${port}/${database}`,
		/** What n8n needs to use this server. */
		env: {
			DB_TYPE: 'postgresdb',
			DB_POSTGRESDB_HOST: '127.0.0.1',
			DB_POSTGRESDB_PORT: String(port),
			DB_POSTGRESDB_DATABASE: database,
			DB_POSTGRESDB_USER: user,
			DB_POSTGRESDB_PASSWORD: password,
		},
		/** Runs SQL on the n8n database; returns the rows. */
		query: (sql, params = []) => withPgClient({ ...connection, database }, async (client) => (await client.query(sql, params)).rows),
		logs: server.logs,
		async stop() {
			await server.stop();
			removeFolder(dir);
		},
	};
}

/**
 * A connected `pg` client (the driver n8n itself ships) for one call: from the n8n of COMPAT_PROFILE
 * when that one is installed (the compatibility suite of an older n8n need not wait for the pinned
 * one), else from the pinned install, which must then be installed (ensureN8n) before the first query.
 */
async function withPgClient(connection, use) {
	const { Client } = await pgDriver();
	const client = new Client({ ...connection, connectionTimeoutMillis: 10_000 });
	await client.connect();
	try {
		return await use(client);
	} finally {
		await client.end();
	}
}

let driver;
async function pgDriver() {
	if (!driver) {
		const { createRequire } = await import('node:module');
		const { installPaths, isInstalled } = await import('../../tools/n8n-install.mjs');
		const profile = process.env.COMPAT_PROFILE;
		const from = profile && isInstalled(profile) ? profile : 'default';
		driver = createRequire(path.join(installPaths(from).dir, 'package.json'))('pg');
	}
	return driver;
}

/** Sends PING over RESP and waits for +PONG. */
function redisPing(port) {
	return new Promise((resolve) => {
		const socket = net.connect(port, '127.0.0.1');
		socket.setTimeout(2000);
		let answer = '';
		socket.on('connect', () => socket.write('PING\r\n'));
		socket.on('data', (chunk) => {
			answer += chunk;
			if (answer.includes('\r\n')) {
				socket.destroy();
				resolve(answer.startsWith('+PONG'));
			}
		});
		socket.on('timeout', () => (socket.destroy(), resolve(false)));
		socket.on('error', () => resolve(false));
	});
}

/**
 * A Redis server on 127.0.0.1 with nothing persisted (its working folder is temporary).
 * Returns { host, port, env (n8n's QUEUE_BULL_REDIS_* variables), logs(), stop() }.
 */
export async function startRedis({ binaries = findRedis(), port } = {}) {
	if (!binaries) throw new Error('redis-server is not installed (see ensureQueueServices())');
	port ??= await freePort();
	const dir = tempFolder('redis');
	const server = await startServer(
		'redis',
		binaries.server,
		['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no', '--daemonize', 'no', '--loglevel', 'warning'],
		{ ready: () => redisPing(port) },
	).catch((error) => {
		removeFolder(dir);
		throw error;
	});
	return {
		host: '127.0.0.1',
		port,
		env: { QUEUE_BULL_REDIS_HOST: '127.0.0.1', QUEUE_BULL_REDIS_PORT: String(port) },
		logs: server.logs,
		async stop() {
			await server.stop();
			removeFolder(dir);
		},
	};
}
