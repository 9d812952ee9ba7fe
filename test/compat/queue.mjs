/**
 * Queue mode, for the install tests: PostgreSQL and Redis (test/e2e/services.mjs) and n8n processes of any
 * profile (test/e2e/n8n.mjs), each with its own user folder and its own `npm` shim (install.mjs), sharing
 * one database, one Redis and one encryption key. Unlike test/e2e/queue.mjs, nothing is installed in the
 * user folders beforehand: the main installs through n8n's editor installer, and a worker that lacks the
 * package must get it from n8n itself.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

import { startN8nWorker } from '../e2e/n8n.mjs';
import { ensureQueueServices, startPostgres, startRedis } from '../e2e/services.mjs';
import { shimmedN8nEnv, startCompatN8n, writeNpmShim } from './install.mjs';

/**
 * Starts PostgreSQL and Redis. Returns { sharedEnv, postgres, redis, startMain(), startWorker(name, env),
 * processes, stop() }. Each process gets `<workDir>/<name>/` as its user folder and `<workDir>/<name>/npm-shim`
 * as its npm; `folder(name)`, `shim(name)` give them.
 */
export async function startCompatQueue({ profile, registry, workDir, nodeBin }) {
	const services = ensureQueueServices();
	if (!services.ok) throw new Error(services.reason);
	const [postgres, redis] = await Promise.all([startPostgres(), startRedis()]);
	const sharedEnv = {
		EXECUTIONS_MODE: 'queue',
		N8N_ENCRYPTION_KEY: randomBytes(24).toString('hex'),
		...postgres.env,
		...redis.env,
	};
	const processes = [];
	const shims = new Map();
	const folder = (name) => {
		const dir = path.join(workDir, name);
		fs.mkdirSync(dir, { recursive: true });
		return dir;
	};
	const shim = (name) => {
		if (!shims.has(name)) shims.set(name, writeNpmShim({ dir: path.join(folder(name), 'npm-shim'), registryUrl: registry.url, nodeBin }));
		return shims.get(name);
	};
	const envOf = (name, extra) => ({ ...sharedEnv, ...shimmedN8nEnv({ shim: shim(name), registry }), ...extra });

	return {
		postgres,
		redis,
		sharedEnv,
		folder,
		shim,
		processes,
		/** `n8n start` in queue mode on the user folder `name`. */
		async startMain(name = 'main', extra = {}) {
			const main = await startCompatN8n({ userFolder: folder(name), profile, env: envOf(name, extra) });
			processes.push(main);
			return main;
		},
		/** `n8n worker` on the user folder `name`. */
		async startWorker(name, extra = {}) {
			const worker = await startN8nWorker({ userFolder: folder(name), profile, env: envOf(name, extra), readyTimeoutMs: 300_000 });
			processes.push(worker);
			return worker;
		},
		async stop() {
			for (const process of processes.splice(0).reverse()) await process.stop().catch(() => {});
			await redis.stop().catch(() => {});
			await postgres.stop().catch(() => {});
		},
	};
}
