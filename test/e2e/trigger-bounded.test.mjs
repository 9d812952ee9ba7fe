/**
 * The trigger's bounds and the full pulling contract in a running n8n 2.41.1 (legacy scheduler,
 * SQLite): a server announcing reread_overlap 400, a backlog with 12-image manifests drained by a
 * trigger polling every second with Max Publications per Poll = 50, then a publication that commits
 * 300 ids below the newest one. Every execution holds at most 50 publications, every publication is
 * delivered exactly once, the late one included (a client that caps the overlap at 100 never gets it).
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';

import { emulatorCredential, node, startTestEmulator, waitFor, withCredential } from './fixtures.mjs';
import { createUserFolder, importCredential, importWorkflow, packPackage, publishWorkflow, readExecutions, startN8n } from './n8n.mjs';

const TRIGGER = 'On new publication';
const MAX_PER_POLL = 50;
const log = (message) => process.env.E2E_QUIET || process.stderr.write(`[trigger-bounded] ${message}\n`);

describe('trigger in a running n8n: Max Publications per Poll and a server announcing overlap 400', () => {
	const cleanups = [];
	after(async () => {
		for (const cleanup of cleanups.reverse()) await cleanup();
	});

	it(`executions of at most ${MAX_PER_POLL}; a publication committed 300 ids below the newest is delivered; each once`, async () => {
		const emulator = await startTestEmulator();
		cleanups.push(() => emulator.close());
		const { control } = emulator;
		await control.setRereadOverlap(400);
		await control.publishBulk({ count: 240, images: 12 });

		const id = 'e2eTriggerBounded1';
		const everySecond = Array.from({ length: 60 }, (_, second) => ({ mode: 'custom', cronExpression: `${second} * * * * *` }));
		const workflow = {
			id,
			name: 'e2e: trigger with Max Publications per Poll, overlap 400',
			nodes: [
				node(TRIGGER, 'n8n-nodes-imagepack.imagePackTrigger', {
					pollTimes: { item: everySecond },
					startFrom: 'beginning',
					includeManifest: true,
					maxPerPoll: MAX_PER_POLL,
				}),
			],
			connections: {},
			settings: { executionOrder: 'v1' },
		};
		const userFolder = await createUserFolder({ tarball: process.env.IMAGEPACK_TARBALL || (await packPackage()) });
		cleanups.push(() => userFolder.cleanup());
		const credential = emulatorCredential(emulator);
		await importCredential(userFolder.dir, credential);
		await importWorkflow(userFolder.dir, withCredential(workflow, credential));
		await publishWorkflow(userFolder.dir, id);

		const n8n = await startN8n({ userFolder: userFolder.dir, echo: !!process.env.E2E_ECHO });
		cleanups.push(() => n8n.stop());
		const delivered = async () => {
			const done = (await readExecutions(userFolder.dir, id)).filter((e) => e.status !== 'running' && e.status !== 'new');
			return { executions: done, items: done.flatMap((e) => e.nodeOutput(TRIGGER).map((item) => item.json)) };
		};
		const until = (count, what) => waitFor(async () => (await delivered()).items.length >= count, { timeoutMs: 180_000, intervalMs: 1000, what });

		await until(240, 'the backlog of 240');
		// A publication allocated now commits late: 300 newer ones become visible first.
		const late = await control.publish({ commit: false });
		await control.publishBulk({ count: 300, images: 12 });
		await until(540, 'the 300 newer publications');
		await control.commitPublication(late.id);
		log(`committed ${late.id}, 300 ids below the newest`);
		await until(541, 'the late publication');
		await new Promise((resolve) => setTimeout(resolve, 5000)); // more polls: a second delivery would show
		const { executions, items } = await delivered();
		await n8n.stop();

		const ids = items.map((item) => item.id);
		assert.equal(new Set(ids).size, ids.length, 'no publication delivered twice');
		assert.equal(ids.length, 541, `all 541 delivered (got ${ids.length})`);
		assert.ok(ids.includes(late.id), 'the late commit is delivered');
		const sizes = executions.map((e) => e.nodeOutput(TRIGGER).length).filter((size) => size > 0);
		assert.ok(Math.max(...sizes) <= MAX_PER_POLL, `no execution above ${MAX_PER_POLL}: ${sizes}`);
		assert.ok(items.every((item) => item.manifest?.blocks?.length), 'every item carries its manifest');
		assert.deepEqual(executions.filter((e) => e.status !== 'success').map((e) => e.status), [], 'no failed poll');
		log(JSON.stringify({ executions: sizes.length, sizes: [...new Set(sizes)] }));
	});
});
