/**
 * n8n in queue mode, for the queue suite and the bench: PostgreSQL and Redis (services.mjs), one main
 * instance (`n8n start`: editor, REST API, webhooks, trigger polls) and workers (`n8n worker`: they run the
 * executions the main puts on the Redis queue). Every process has its own user folder with the package
 * installed in it (a community package must be installed on every instance), and all share one database,
 * one Redis and one encryption key.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import {
	createUserFolder,
	ownerEnv,
	restSession,
	startN8n,
	startN8nWorker,
	withRunData,
} from './n8n.mjs';
import { node } from './fixtures.mjs';
import { startPostgres, startRedis } from './services.mjs';

/** Three n8n processes start side by side: on a busy 2-core machine that takes minutes, not seconds. */
const READY_TIMEOUT_MS = 300_000;

export const QUEUE_OWNER = { email: 'owner@example.com', password: 'Queue-Mode-Password-1' };

/**
 * Starts PostgreSQL, Redis, the main and `workers` workers (each with `--concurrency=concurrency`).
 * `binaryDataMode`: `database` (n8n's default in queue mode) or `filesystem`, with every process pointed
 * at one shared folder (N8N_BINARY_DATA_STORAGE_PATH). `env` goes to every n8n process and CLI
 * call, `mainEnv` / `workerEnv` to the main / the workers only. Credentials and workflows are then created through the
 * main's REST API as its owner (createCredential, createWorkflow): no n8n CLI start (seconds each).
 */
export async function startQueueCluster({
	tarball,
	workers = 2,
	concurrency = 10,
	binaryDataMode,
	env = {},
	mainEnv = {},
	workerEnv = {},
	echo = !!process.env.E2E_ECHO,
} = {}) {
	const cluster = { workers: [], folders: { workers: [] } };
	const stops = [];
	try {
		const [postgres, redis] = await Promise.all([startPostgres(), startRedis()]);
		Object.assign(cluster, { postgres, redis });
		stops.push(() => redis.stop(), () => postgres.stop());

		const shared = fs.mkdtempSync(path.join(os.tmpdir(), 'imagepack-queue-binary-'));
		stops.push(() => process.env.KEEP_E2E || fs.rmSync(shared, { recursive: true, force: true }));
		cluster.sharedEnv = {
			EXECUTIONS_MODE: 'queue',
			N8N_ENCRYPTION_KEY: randomBytes(24).toString('hex'),
			...postgres.env,
			...redis.env,
			...env,
		};
		/** For the processes started from now on: `database` (queue mode's default) or `filesystem` (shared folder). */
		cluster.setBinaryDataMode = (mode = 'database') => {
			cluster.binaryDataMode = mode;
			cluster.sharedEnv.N8N_DEFAULT_BINARY_DATA_MODE = mode;
			if (mode === 'filesystem') cluster.sharedEnv.N8N_BINARY_DATA_STORAGE_PATH = shared;
			else delete cluster.sharedEnv.N8N_BINARY_DATA_STORAGE_PATH;
		};
		cluster.setBinaryDataMode(binaryDataMode);

		cluster.folders.main = await createUserFolder({ tarball });
		stops.push(() => cluster.folders.main.cleanup());
		for (let index = 0; index < workers; index++) {
			const folder = await createUserFolder({ tarball });
			cluster.folders.workers.push(folder);
			stops.push(() => folder.cleanup());
		}

		const mainEnvironment = { ...ownerEnv(QUEUE_OWNER), N8N_SECURE_COOKIE: 'false', ...mainEnv };
		cluster.startMain = async (extra = {}) => {
			cluster.main = await startN8n({ userFolder: cluster.folders.main.dir, env: { ...cluster.sharedEnv, ...mainEnvironment, ...extra }, echo, readyTimeoutMs: READY_TIMEOUT_MS });
			return cluster.main;
		};
		/** Logs of earlier processes of each worker slot (a killed or restarted worker). */
		const pastLogs = [];
		cluster.workerLogs = (index) => (pastLogs[index] ?? '') + (cluster.workers[index]?.logs() ?? '');
		cluster.startWorker = async (index, extra = {}) => {
			if (cluster.workers[index]) pastLogs[index] = cluster.workerLogs(index);
			cluster.workers[index] = await startN8nWorker({
				userFolder: cluster.folders.workers[index].dir,
				concurrency,
				env: { ...cluster.sharedEnv, ...workerEnv, ...extra },
				echo,
				readyTimeoutMs: READY_TIMEOUT_MS,
			});
			return cluster.workers[index];
		};
		// Registered first: if one process fails to start, the others that did are stopped too.
		stops.push(async () => {
			await cluster.main?.stop();
			await Promise.all(cluster.workers.map((worker) => worker?.stop()));
		});
		// All at once: n8n serializes its schema migrations with a lock in the database.
		const starts = [cluster.startMain(), ...cluster.folders.workers.map((_, index) => cluster.startWorker(index))];
		const failed = (await Promise.allSettled(starts)).find((result) => result.status === 'rejected');
		if (failed) throw failed.reason;
	} catch (error) {
		await stopAll(stops);
		throw error;
	}

	/** A REST session on the main, logged in as the owner. */
	const sessions = new WeakMap();
	cluster.rest = async () => {
		if (!sessions.has(cluster.main)) sessions.set(cluster.main, await restSession(cluster.main.url, QUEUE_OWNER));
		return sessions.get(cluster.main);
	};

	/** Creates a credential ({ name, type, data }) through the REST API; returns { id, name }. */
	cluster.createCredential = async ({ name, type, data }) => {
		const created = await ok(await (await cluster.rest()).post('/rest/credentials', { name, type, data }), 'create credential');
		return { id: created.id, name: created.name };
	};

	/**
	 * Creates a workflow (with its id) through the REST API and, with `activate`, publishes it: the
	 * running main activates it at once (webhooks registered, trigger activation poll).
	 */
	cluster.createWorkflow = async (workflow, { activate = false } = {}) => {
		const rest = await cluster.rest();
		const { id, name, nodes, connections, settings } = workflow;
		const created = await ok(await rest.post('/rest/workflows', { id, name, nodes, connections, settings }), `create workflow ${name}`);
		if (activate) await ok(await rest.post(`/rest/workflows/${created.id}/activate`, { versionId: created.versionId }), `activate ${name}`);
		return created;
	};

	/** The workflow's executions from PostgreSQL, oldest first, with their run data (see withRunData). */
	cluster.executions = async (workflowId) =>
		withRunData(
			await cluster.postgres.query(
				`SELECT e.id, e.mode, e.status, e."retryOf", e."startedAt", e."stoppedAt", d.data
				   FROM execution_entity e LEFT JOIN execution_data d ON d."executionId" = e.id
				  WHERE e."workflowId" = $1 ORDER BY e.id`,
				[workflowId],
			),
		);

	/** The workflow's static data as stored in PostgreSQL (null when none). */
	cluster.staticData = async (workflowId) => {
		const [row] = await cluster.postgres.query('SELECT "staticData" FROM workflow_entity WHERE id = $1', [workflowId]);
		if (!row) throw new Error(`No workflow ${workflowId}`);
		return typeof row.staticData === 'string' ? JSON.parse(row.staticData) : row.staticData;
	};

	/**
	 * Which worker ran an execution: the index of the worker whose own log says "Worker started execution
	 * <id> (job …)" (n8n's JobProcessor, level info), or -1. Logs of stopped workers count too.
	 */
	cluster.workerOf = (executionId) => {
		const line = `Worker started execution ${executionId} (`;
		return cluster.folders.workers.findIndex((_, index) => cluster.workerLogs(index).includes(line));
	};

	/** Writes every process's log (main, workers, PostgreSQL, Redis) into `dir`. */
	cluster.saveLogs = (dir) => {
		fs.mkdirSync(dir, { recursive: true });
		const write = (name, text) => text && fs.writeFileSync(path.join(dir, `${name}.log`), text);
		write('main', cluster.main?.logs());
		cluster.folders.workers.forEach((_, index) => write(`worker-${index}`, cluster.workerLogs(index)));
		write('postgres', cluster.postgres.logs());
		write('redis', cluster.redis.logs());
	};

	cluster.stop = () => {
		// E2E_LOG_DIR=<folder> keeps the logs of a run (the main's earlier processes are not kept).
		if (process.env.E2E_LOG_DIR) cluster.saveLogs(process.env.E2E_LOG_DIR);
		return stopAll(stops);
	};
	return cluster;
}

/**
 * Webhook (POST `path`, answers when Generate is done) → Image Pack Generate (n = 2, the body's prompt,
 * downloads on by default): the job both the queue suite and the queue bench put on the workers.
 */
export function webhookGenerateWorkflow({ id, name, path: webhookPath, webhookId }) {
	return {
		id,
		name,
		nodes: [
			node('Webhook', 'n8n-nodes-base.webhook', { httpMethod: 'POST', path: webhookPath, responseMode: 'lastNode', options: {} }, { typeVersion: 2, webhookId }),
			node('Generate', 'n8n-nodes-imagepack.imagePack', { resource: 'image', operation: 'generate', prompt: '={{ $json.body.prompt }}', n: 2 }, { position: [220, 0] }),
		],
		connections: { Webhook: { main: [[{ node: 'Generate', type: 'main', index: 0 }]] } },
		settings: { executionOrder: 'v1' },
	};
}

/**
 * POSTs `{ prompt }` to a production webhook and returns `{ status, body }`; waits while n8n has not
 * registered it yet (right after activation a 404 runs nothing).
 */
export async function callWebhook(url, webhookPath, prompt, timeoutMs = 60_000) {
	const started = Date.now();
	for (;;) {
		const response = await fetch(`${url}/webhook/${webhookPath}`, {
			method: 'POST',
			headers: { 'content-type': 'application/json' },
			body: JSON.stringify({ prompt }),
		});
		const text = await response.text();
		if (response.status !== 404) return { status: response.status, body: text ? JSON.parse(text) : null };
		if (Date.now() - started > timeoutMs) throw new Error(`Timed out after ${timeoutMs} ms waiting for the production webhook ${webhookPath}`);
		await new Promise((resolve) => setTimeout(resolve, 500));
	}
}

/** The `data` of a successful n8n REST answer; throws with the answer otherwise. */
export function ok(answer, what) {
	if (answer.status >= 300) throw new Error(`${what}: HTTP ${answer.status} ${JSON.stringify(answer.body)}`);
	return answer.body.data;
}

async function stopAll(stops) {
	for (const stop of stops.reverse()) {
		try {
			await stop();
		} catch (error) {
			process.stderr.write(`[queue] while stopping: ${error.message}\n`);
		}
	}
	stops.length = 0;
}
