/**
 * The trigger under both of n8n 2.41.1's poll schedulers, in a running n8n (SQLite, one main): a
 * backlog with manifests behind a realistic API latency, Start From = Beginning, poll times four times
 * a minute (0, 15, 30, 45 s: closer together than a poll can last), n8n restarted in the middle of the
 * drain, a manifest request that hangs 20 s (longer than the 15 s to the next poll time: the poll cuts
 * it at its deadline and delivers what it completed), a late commit and a re-published (pack_id,
 * version) among the records. Max Publications per Poll keeps its default (100).
 *
 *   legacy  — n8n's default: one long-lived workflow, every poll time fires a poll.
 *   durable — N8N_SCHEDULER_ENABLED, N8N_SCHEDULER_POLL_TRIGGERS_ENABLED,
 *             N8N_USE_WORKFLOW_PUBLICATION_SERVICE, N8N_POLLER_DURABLE_CURSORS_ENABLED: cursor in
 *             `poller_state`, a state copy per poll, commits fenced by the task lease, ~36 s budget.
 *
 * Every publication must be delivered exactly once (by id and by (pack_id, version)), no poll may fail
 * with an API/network error, and the backlog must drain. The time to drain, the polls and the requests
 * are printed. E2E_SCHEDULER_BACKLOG (default 400) scales it up, E2E_SCHEDULER_LATENCY_MS (default: a
 * quarter of the backlog per poll) sets the latency, E2E_SCHEDULERS=legacy|durable runs one of them.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';

import { emulatorCredential, node, startTestEmulator, waitFor, withCredential } from './fixtures.mjs';
import {
	createUserFolder,
	importCredential,
	importWorkflow,
	packPackage,
	publishWorkflow,
	querySqlite,
	readExecutions,
	startN8n,
} from './n8n.mjs';

const BACKLOG = Number(process.env.E2E_SCHEDULER_BACKLOG ?? 400);
/**
 * A drain must span several polls for the restart and the 20 s request to land mid-drain. A poll reads
 * for about 12 s, four manifests at a time, and n8n no longer adds tens of ms per request (the
 * credential is read once per poll): the default latency makes a poll take about a quarter of the
 * backlog (480 ms for 400).
 */
const LATENCY_MS = Number(process.env.E2E_SCHEDULER_LATENCY_MS ?? Math.max(80, Math.ceil((12_000 * 4) / (BACKLOG / 4))));
const SCHEDULERS = (process.env.E2E_SCHEDULERS ?? 'legacy,durable').split(',');
const TRIGGER = 'On new publication';
const DURABLE_ENV = {
	N8N_SCHEDULER_ENABLED: 'true',
	N8N_SCHEDULER_POLL_TRIGGERS_ENABLED: 'true',
	N8N_USE_WORKFLOW_PUBLICATION_SERVICE: 'true',
	N8N_POLLER_DURABLE_CURSORS_ENABLED: 'true',
};
const log = (message) => process.env.E2E_QUIET || process.stderr.write(`[schedulers] ${message}\n`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

let tarball;
const packed = async () => (tarball ??= process.env.IMAGEPACK_TARBALL || (await packPackage()));

// The two schedulers side by side, each with its own emulator, user folder and n8n: a drain mostly waits
// on the emulator's latency and the poll times, so together they take the time of one.
describe("trigger under n8n's poll schedulers", { concurrency: SCHEDULERS.length }, () => {
	for (const scheduler of SCHEDULERS) {
		describe(`trigger under n8n's ${scheduler} poll scheduler`, () => {
			const cleanups = [];
			after(async () => {
				for (const cleanup of cleanups.reverse()) await cleanup();
			});

			it(`${BACKLOG} publications with manifests (${LATENCY_MS} ms latency), polls every 15 s, a restart and a 20 s request mid-drain: each delivered once`, async () => {
				const emulator = await startTestEmulator();
				cleanups.push(() => emulator.close());
				const control = emulator.control;
				await control.setLatency('*', LATENCY_MS);

				// The backlog; one publication near its end stays uncommitted until the rest is delivered.
				await control.publishBulk({ count: BACKLOG - 11 });
				const late = await control.publish({ packId: 'pk_late', commit: false });
				const tail = await control.publishBulk({ count: 10 });

				const id = `e2eSched${scheduler}`;
				const workflow = {
					id,
					name: `e2e: trigger under the ${scheduler} scheduler`,
					nodes: [
						node(TRIGGER, 'n8n-nodes-imagepack.imagePackTrigger', {
							pollTimes: { item: [0, 15, 30, 45].map((second) => ({ mode: 'custom', cronExpression: `${second} * * * * *` })) },
							startFrom: 'beginning',
							includeManifest: true,
						}),
						node('Received', 'n8n-nodes-base.noOp', {}, { position: [220, 0] }),
					],
					connections: { [TRIGGER]: { main: [[{ node: 'Received', type: 'main', index: 0 }]] } },
					settings: { executionOrder: 'v1' },
				};
				const userFolder = await createUserFolder({ tarball: await packed() });
				cleanups.push(() => userFolder.cleanup());
				const credential = emulatorCredential(emulator);
				await importCredential(userFolder.dir, credential);
				await importWorkflow(userFolder.dir, withCredential(workflow, credential));
				await publishWorkflow(userFolder.dir, id);

				const env = scheduler === 'durable' ? DURABLE_ENV : {};
				let n8n;
				const start = async () => {
					n8n = await startN8n({ userFolder: userFolder.dir, env, echo: !!process.env.E2E_ECHO });
					return n8n;
				};
				cleanups.push(() => n8n?.stop());

				/** Finished executions' trigger items, plus the failed ones. */
				const executions = async () => {
					const all = await readExecutions(userFolder.dir, id);
					const done = all.filter((e) => e.status !== 'running' && e.status !== 'new');
					return {
						items: done.flatMap((e) => e.nodeOutput(TRIGGER).map((item) => item.json)),
						failed: done.filter((e) => e.status !== 'success'),
						count: done.length,
					};
				};
				const progress = async (atLeast, timeoutMs, what) =>
					waitFor(
						async () => {
							const seen = await executions();
							return seen.items.length >= atLeast && seen;
						},
						{ timeoutMs, intervalMs: 2000, what },
					);
				// A poll delivers about (12 s of work) / (per-record cost); the bound only stops a stuck run.
				const drainBoundMs = Math.max(300_000, BACKLOG * 1500);

				const startedAt = Date.now();
				await start();
				const third = Math.floor(BACKLOG / 3);
				const before = await progress(third, drainBoundMs, `${third} publications delivered before the restart`);
				log(`${scheduler}: ${before.items.length} delivered after ${Math.round((Date.now() - startedAt) / 1000)} s; restarting n8n mid-drain`);
				await n8n.stop();
				n8n = null;
				await start();
				// Once polls deliver again, one manifest request hangs 20 s, longer than the 15 s to the next
				// poll time: the poll cuts it at its deadline (95 % of 15 s) and delivers what it completed.
				await progress(before.items.length + 1, drainBoundMs, 'a delivery after the restart');
				await control.injectFault({ route: 'getPublication', kind: 'slow', when: 'before', delayMs: 20_000, count: 1 });
				await progress(BACKLOG - 1, drainBoundMs, `all ${BACKLOG - 1} committed publications delivered`);
				const drainSeconds = (Date.now() - startedAt) / 1000;

				// Then a late commit (an id below the cursor, inside the re-read window) and a (pack_id,
				// version) delivered up to 500 publications earlier published again under a new id: the
				// first is delivered, the second not.
				await control.commitPublication(late.id);
				const earlier = await control.getPublication(Math.max(1, tail.lastId - 500));
				await control.repeatPublication(earlier.id);
				await progress(BACKLOG, 120_000, 'the late publication');
				// One more poll time at least: a wrong second delivery would show up here.
				await sleep(20_000);
				const final = await executions();
				await n8n.stop();
				n8n = null;

				const ids = final.items.map((item) => item.id);
				const keys = final.items.map((item) => `${item.pack_id}@${item.version}`);
				const duplicates = ids.filter((value, index) => ids.indexOf(value) !== index);
				assert.deepEqual(duplicates, [], 'no publication delivered twice');
				assert.equal(new Set(keys).size, keys.length, 'no (pack_id, version) delivered twice');
				assert.equal(ids.length, BACKLOG, `all ${BACKLOG} delivered (got ${ids.length})`);
				assert.ok(ids.includes(late.id), 'the late commit is delivered');
				assert.ok(final.items.every((item) => item.manifest?.schemaVersion), 'every item carries its manifest');
				const errors = final.failed.map((e) => e.run?.resultData?.error?.message ?? e.status);
				assert.ok(
					!errors.some((message) => /connection to the Image Pack API failed|network error/i.test(message)),
					`no poll reported as a network error: ${JSON.stringify(errors)}`,
				);

				const requests = {
					list: (await control.requests({ route: 'listPublications' })).length,
					detail: (await control.requests({ route: 'getPublication' })).length,
				};
				const figures = {
					scheduler,
					backlog: BACKLOG,
					latencyMs: LATENCY_MS,
					drainSeconds: Math.round(drainSeconds),
					perSecond: Math.round((BACKLOG / drainSeconds) * 10) / 10,
					executions: final.count,
					failedExecutions: final.failed.length,
					listRequests: requests.list,
					detailRequests: requests.detail,
					restartAfter: before.items.length,
				};
				if (scheduler === 'durable') {
					const [state] = await querySqlite(userFolder.dir, 'SELECT length(cursor) AS bytes FROM poller_state');
					figures.pollerStateBytes = state?.bytes;
				}
				log(JSON.stringify(figures));
			});
		});
	}
});
