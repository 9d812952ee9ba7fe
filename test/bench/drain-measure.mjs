// What the drain bench measures in a running n8n (drain.bench.mjs): n8n's idle RSS (its peak over a
// drain is n8n.bench.mjs's watchRss), V8's heap from n8n's /metrics, when a drain is over, and the
// ids n8n stored as emitted.
import path from 'node:path';

import { ensureN8n } from '../../tools/n8n-install.mjs';
import { runCommand } from '../e2e/n8n.mjs';
import { call, hostStats, procStatus } from './n8n.bench.mjs';

/**
 * The ids each execution of the workflow emitted (the output of `nodeName`), read row by row under
 * n8n's own Node with its sqlite3 and flatted, so 100,000 items with manifests never sit in one
 * string. Also counts executions by status.
 */
export async function emittedIds(userFolder, workflowId, nodeName) {
	const paths = await ensureN8n('default');
	const script = `
		const sqlite3 = require('sqlite3');
		const { parse } = require('flatted');
		const [file, workflowId, nodeName] = JSON.parse(process.argv[1]);
		const db = new sqlite3.Database(file, sqlite3.OPEN_READONLY);
		const ids = [];
		const statuses = {};
		let lastStoppedAt = 0;
		db.each(
			'SELECT e.status, e.stoppedAt, d.data FROM execution_entity e LEFT JOIN execution_data d ON d.executionId = e.id WHERE e.workflowId = ? ORDER BY e.id',
			[workflowId],
			(error, row) => {
				if (error) throw error;
				statuses[row.status] = (statuses[row.status] ?? 0) + 1;
				const run = row.data ? parse(row.data) : null;
				const items = run?.resultData?.runData?.[nodeName]?.at(-1)?.data?.main?.[0] ?? [];
				if (items.length && row.stoppedAt) lastStoppedAt = Math.max(lastStoppedAt, Date.parse(String(row.stoppedAt).replace(' ', 'T') + (/Z|\\+/.test(String(row.stoppedAt)) ? '' : 'Z')));
				for (const item of items) ids.push(Number(item.json.id));
			},
			(error) => {
				if (error) throw error;
				process.stdout.write(JSON.stringify({ ids, statuses, lastStoppedAt }));
				db.close();
			},
		);`;
	const file = path.join(userFolder, '.n8n', 'database.sqlite');
	const result = await runCommand(paths.nodeBin, ['--max-old-space-size=4096', '-e', script, JSON.stringify([file, workflowId, nodeName])], {
		cwd: paths.dir,
		timeoutMs: 10 * 60_000,
	});
	if (result.code !== 0) throw new Error(`reading the executions failed (${result.code}): ${result.stderr.slice(0, 2000)}`);
	return JSON.parse(result.stdout);
}

/**
 * n8n's idle RSS: n8n holds about 300 MiB more for the first 10-15 s after it reports ready, then
 * gives it back. So: at least 30 s after the start, and the last five samples (3 s apart) within 2 %.
 */
export async function idleRss(pid, startedAt) {
	const samples = [];
	for (;;) {
		await new Promise((resolve) => setTimeout(resolve, 3000));
		samples.push(procStatus(pid).rss);
		const last = samples.slice(-5);
		const settled = last.length === 5 && Math.max(...last) <= 1.02 * Math.min(...last);
		if ((settled && Date.now() - startedAt > 30_000) || Date.now() - startedAt > 180_000) return samples.at(-1);
	}
}

/** n8n's V8 figures from its /metrics (N8N_METRICS=true): heap total and in use, external memory. */
export async function v8Memory(url) {
	try {
		const text = (await call(`${url}/metrics`)).text;
		const read = (name) => Number(new RegExp(`^\\w*${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
		return { heapTotal: read('nodejs_heap_size_total_bytes'), heapUsed: read('nodejs_heap_size_used_bytes'), external: read('nodejs_external_memory_bytes') };
	} catch {
		return { heapTotal: NaN, heapUsed: NaN, external: NaN };
	}
}

/** The highest of each V8 figure, sampled every 2 s until stop(). */
export function watchV8(url) {
	const max = { heapTotal: 0, heapUsed: 0, external: 0 };
	let running = true;
	const loop = (async () => {
		while (running) {
			const now = await v8Memory(url);
			for (const key of Object.keys(max)) if (now[key] > max[key]) max[key] = now[key];
			await new Promise((resolve) => setTimeout(resolve, 2000));
		}
	})();
	return {
		async stop() {
			running = false;
			await loop;
			return max;
		},
	};
}

/**
 * Waits until the backlog is drained: every manifest was read once at least, then nothing new was
 * read for `quietMs` (the user's build re-reads what it has, so detail requests alone do not tell),
 * or n8n exited (a crash), or `timeoutMs` passed.
 */
export async function untilDrained({ baseUrl, n8n, backlog, quietMs, timeoutMs }) {
	const started = Date.now();
	let last = -1;
	let changed = Date.now();
	for (;;) {
		await new Promise((resolve) => setTimeout(resolve, 1000));
		if (n8n.process.exitCode !== null || n8n.process.signalCode !== null) return 'crashed';
		const { details } = await hostStats(baseUrl);
		if (details !== last) changed = Date.now();
		last = details;
		if (details >= backlog && Date.now() - changed > quietMs) return 'drained';
		if (Date.now() - started > timeoutMs) return 'timeout';
	}
}

