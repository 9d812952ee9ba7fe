/**
 * Queue mode in the real n8n 2.41.1 (`npm run bench -- --queue`, opt-in: it starts PostgreSQL, Redis, a main
 * and two workers, about 1.5 minutes before the first figure). M webhook-started executions, each a
 * Generate (n = 2, downloads on) with the emulator's generation latency L, over W workers of concurrency c:
 * wall time from the first call to the last answer against the ideal ceil(M / (W × c)) × L
 * (the target: ≤ 1.2 ×), and how the executions were spread over the workers.
 */
import { emulatorCredential, startTestEmulator, withCredential } from '../e2e/fixtures.mjs';
import { ensureN8n, packPackage } from '../e2e/n8n.mjs';
import { callWebhook, startQueueCluster, webhookGenerateWorkflow } from '../e2e/queue.mjs';
import { ensureQueueServices } from '../e2e/services.mjs';
import { figure } from './figures.ts';

const GROUP = 'Queue mode (n8n 2.41.1, main + 2 workers, PostgreSQL, Redis)';
const PATH = 'ipx-bench-generate';

const workflow = webhookGenerateWorkflow({ id: 'ipxBenchQueue001', name: 'bench: webhook → Generate', path: PATH, webhookId: '7d2f8a4c-1b3e-4f6a-8c9d-0e1f2a3b4c5d' });

async function call(url, prompt) {
	const answer = await callWebhook(url, PATH, prompt);
	if (answer.status !== 200) throw new Error(`webhook answered ${answer.status}`);
}

export async function benchQueue({ log, quick, clock = performance }) {
	const services = ensureQueueServices();
	if (!services.ok) {
		log(`queue mode skipped: ${services.reason}`);
		return [];
	}
	const workers = 2;
	const concurrency = 5;
	const latencyMs = 2000;
	const runs = quick ? [20] : [20, 40];
	await ensureN8n();
	const emulator = await startTestEmulator();
	let cluster;
	try {
		await emulator.control.setLatency('generate', latencyMs);
		const tarball = process.env.IMAGEPACK_TARBALL || (await packPackage());
		log('queue: starting PostgreSQL, Redis, the main and 2 workers…');
		cluster = await startQueueCluster({ tarball, workers, concurrency });
		const credential = await cluster.createCredential(emulatorCredential(emulator));
		await cluster.createWorkflow(withCredential(workflow, credential), { activate: true });
		await call(cluster.main.url, 'warm-up');

		const figures = [];
		for (const m of runs) {
			const before = new Set((await cluster.executions(workflow.id)).map((e) => e.id));
			log(`queue: ${m} webhook calls…`);
			const started = clock.now();
			await Promise.all(Array.from({ length: m }, (_, index) => call(cluster.main.url, `Product ${index}`)));
			const wallMs = clock.now() - started;
			const executions = (await cluster.executions(workflow.id)).filter((e) => !before.has(e.id));
			const perWorker = Array(workers).fill(0);
			for (const execution of executions) perWorker[cluster.workerOf(execution.id)]++;
			const idealMs = Math.ceil(m / (workers * concurrency)) * latencyMs;
			figures.push(
				figure({
					group: GROUP,
					figure: `${m} webhook executions (Generate n = 2 with downloads), W = ${workers}, c = ${concurrency}, L = ${latencyMs} ms — wall`,
					measured: wallMs,
					ideal: idealMs,
					unit: 'ms',
					maxRatio: 1.2,
				}),
				figure({
					group: GROUP,
					figure: `… executions per worker (${perWorker.join(' / ')}) — busiest worker`,
					measured: Math.max(...perWorker),
					ideal: m / workers,
					unit: '',
					target: 'spread over both',
					verdict: perWorker.every((count) => count > 0) && executions.length === m ? 'pass' : 'miss',
				}),
			);
		}
		return figures;
	} finally {
		await cluster?.stop();
		await emulator.close();
	}
}
