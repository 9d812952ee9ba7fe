/**
 * The polling trigger in a running n8n: two published workflows, the listing example (Start From = Now,
 * uploads every image to a local collector) and a plain one (Start From = Beginning, manifests included).
 *
 *   publish P1 · start n8n → activation polls (Beginning emits P1, Now only records where "now" is)
 *   → publish L (not committed yet), P2, P3 → timed poll (both emit P2, P3) → commit L (an id below
 *   the cursor) → stop n8n → start again → activation polls emit L, nothing else → stop.
 *
 * Every publication is emitted exactly once per workflow (read back from n8n's execution table), the
 * static data n8n saved survives the restart (read from its database before and after), and the
 * collector received each downloadable image once, with its note, never a deleted one.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';

import {
	emulatorCredential,
	loadExample,
	node,
	pointListingAt,
	startCollector,
	startTestEmulator,
	waitFor,
	withCredential,
} from './fixtures.mjs';
import {
	createUserFolder,
	importCredential,
	importWorkflow,
	packPackage,
	publishWorkflow,
	readExecutions,
	readStaticData,
	startN8n,
	waitForFinishedExecutions,
} from './n8n.mjs';

const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');
const LISTING = 'ipxPublishToList';
const BEGINNING = 'e2eTriggerBegin1';
const TRIGGER_NODE = 'On new publication';
/** Seconds from the workflow import to the first timed poll: covers publish:workflow ×2 and n8n's start. */
const FIRST_POLL_AFTER_S = Number(process.env.E2E_FIRST_POLL_AFTER_S ?? 40);

/** Both workflows poll once a minute at second `second` (n8n refuses polls more often than once a minute). */
const everyMinuteAt = (second) => ({ item: [{ mode: 'custom', cronExpression: `${second} * * * * *` }] });

describe('trigger in a running n8n 2.41.1', () => {
	let emulator;
	let collector;
	let userFolder;
	let n8n;
	const log = (message) => process.env.E2E_QUIET || process.stderr.write(`[trigger] ${message}\n`);
	/** Publications by name, and the executions and static data read at each step. */
	const seen = {};

	const ids = (execution) => execution.nodeOutput(TRIGGER_NODE).map((item) => item.json.id);
	const listPolls = async () => (await emulator.control.requests({ route: 'listPublications' })).length;

	async function start() {
		n8n = await startN8n({ userFolder: userFolder.dir, echo: !!process.env.E2E_ECHO });
		return n8n;
	}

	const executionsSettled = (workflowId, count) => waitForFinishedExecutions(userFolder.dir, workflowId, count);

	before(async () => {
		emulator = await startTestEmulator();
		collector = await startCollector();
		seen.p1 = await emulator.control.publish({ packId: 'pk_before' });

		const credential = emulatorCredential(emulator);
		const second = (Math.floor(Date.now() / 1000) + FIRST_POLL_AFTER_S) % 60;
		const listing = pointListingAt(loadExample('publish-to-listing.json'), collector.url);
		listing.nodes.find((n) => n.name === TRIGGER_NODE).parameters.pollTimes = everyMinuteAt(second);
		const beginning = {
			id: BEGINNING,
			name: 'e2e: trigger from the beginning, with manifests',
			nodes: [
				node(TRIGGER_NODE, 'n8n-nodes-imagepack.imagePackTrigger', {
					pollTimes: everyMinuteAt(second),
					includeManifest: true,
					startFrom: 'beginning',
				}),
				node('Received', 'n8n-nodes-base.noOp', {}, { position: [220, 0] }),
			],
			connections: { [TRIGGER_NODE]: { main: [[{ node: 'Received', type: 'main', index: 0 }]] } },
			settings: { executionOrder: 'v1' },
		};

		userFolder = await createUserFolder({ tarball: process.env.IMAGEPACK_TARBALL || (await packPackage()) });
		await importCredential(userFolder.dir, credential);
		await importWorkflow(userFolder.dir, [withCredential(listing, credential), withCredential(beginning, credential)]);
		await publishWorkflow(userFolder.dir, LISTING);
		await publishWorkflow(userFolder.dir, BEGINNING);
		log(`timed polls at second ${second} of every minute`);
	});

	after(async () => {
		await n8n?.stop();
		await collector?.close();
		await emulator?.close();
		userFolder?.cleanup();
	});

	it('activation: Beginning emits the existing publication, Now emits nothing and saves its starting point', async () => {
		await start();
		const [first] = await executionsSettled(BEGINNING, 1);
		assert.equal(first.mode, 'trigger');
		assert.equal(first.status, 'success');
		assert.deepEqual(ids(first), [seen.p1.id]);
		const record = first.nodeOutput(TRIGGER_NODE)[0].json;
		assert.equal(record.pack_id, 'pk_before');
		assert.equal(record.manifest.schemaVersion, 3, 'Include Manifest attaches the manifest');
		assert.ok(record.manifest.blocks.some((block) => block.type === 'images'));

		// The Now workflow's activation poll has run too (n8n activates workflows one after the other).
		await waitFor(async () => (await readStaticData(userFolder.dir, LISTING))?.[`node:${TRIGGER_NODE}`], {
			timeoutMs: 30_000,
			what: 'the listing trigger’s static data after activation',
		});
		assert.deepEqual(await readExecutions(userFolder.dir, LISTING), []);
		seen.activationPolls = await listPolls();
	});

	it('timed poll: each new publication once; a not yet committed one is not skipped for good', async () => {
		// L gets the lowest new id but stays invisible until after the timed poll.
		seen.late = await emulator.control.publish({ packId: 'pk_late', commit: false });
		seen.p2 = await emulator.control.publish({ packId: 'pk_shoes' });
		seen.p3 = await emulator.control.publish({ packId: 'pk_bags', schemaVersion: 2, publishedAt: Date.parse('2026-08-01T00:00:00Z') });
		seen.deleted = seen.p3.manifest.slots[1].items[0].imageId;
		await emulator.control.deleteImage(seen.deleted);
		assert.ok(seen.late.id < seen.p2.id);
		log(`published L=${seen.late.id} (uncommitted), P2=${seen.p2.id}, P3=${seen.p3.id}; waiting for the timed poll…`);

		const executions = await executionsSettled(BEGINNING, 2);
		assert.deepEqual(ids(executions[1]), [seen.p2.id, seen.p3.id]);
		const [listing] = await executionsSettled(LISTING, 1);
		assert.equal(listing.status, 'success', JSON.stringify(listing.run?.resultData?.error));
		if (process.env.E2E_DEBUG) {
			for (const [name, runs] of Object.entries(listing.run.resultData.runData)) {
				log(`${name}: ${JSON.stringify(runs.at(-1).data?.main?.[0]?.map((item) => item.json)).slice(0, 600)}`);
			}
		}
		assert.deepEqual(ids(listing), [seen.p2.id, seen.p3.id]);
		assert.ok((await listPolls()) > seen.activationPolls, 'a timed poll ran');

		await emulator.control.commitPublication(seen.late.id);
		seen.beforeStop = {
			listing: await readStaticData(userFolder.dir, LISTING),
			beginning: await readStaticData(userFolder.dir, BEGINNING),
		};
	});

	it('restart: static data survives, the late publication is emitted once, nothing twice', async () => {
		await n8n.stop();
		n8n = null;
		const stopped = {
			listing: await readStaticData(userFolder.dir, LISTING),
			beginning: await readStaticData(userFolder.dir, BEGINNING),
		};
		assert.deepEqual(stopped, seen.beforeStop, 'what n8n saved is still there after it stopped');
		for (const data of Object.values(stopped)) {
			const state = data[`node:${TRIGGER_NODE}`];
			assert.ok(state.cursor >= seen.p3.id - 1, `cursor ${state.cursor}`);
			assert.ok(JSON.stringify(data).length < 10_000, 'static data stays small');
		}

		await start();
		const beginning = await executionsSettled(BEGINNING, 3);
		const listing = await executionsSettled(LISTING, 2);
		assert.deepEqual(ids(beginning[2]), [seen.late.id]);
		assert.deepEqual(ids(listing[1]), [seen.late.id]);
		// Give a possible (wrong) extra emission a moment to show up, then stop and count.
		await new Promise((resolve) => setTimeout(resolve, 3000));
		await n8n.stop();
		n8n = null;

		const all = {
			beginning: (await readExecutions(userFolder.dir, BEGINNING)).flatMap(ids),
			listing: (await readExecutions(userFolder.dir, LISTING)).flatMap(ids),
		};
		assert.deepEqual(all.beginning, [seen.p1.id, seen.p2.id, seen.p3.id, seen.late.id]);
		assert.deepEqual(all.listing, [seen.p2.id, seen.p3.id, seen.late.id]);
		const after = await readStaticData(userFolder.dir, LISTING);
		assert.notDeepEqual(after, stopped.listing, 'the emission after the restart was saved');
	});

	it('listing example: every downloadable image uploaded once with its note, deleted ones skipped', async () => {
		const images = new Map((await emulator.control.images()).map((image) => [image.id, image]));
		const expected = [];
		for (const publication of [seen.p2, seen.p3, seen.late]) {
			const record = await emulator.control.getPublication(publication.id);
			const groups = record.manifest.blocks ?? record.manifest.slots;
			let note = null;
			let position = 0;
			for (const group of groups) {
				if (group.type === 'text') note = group.content;
				for (const item of group.items ?? []) {
					const groupNote = record.manifest.slots ? (group.note ?? null) : note;
					if (item.download_url) expected.push({ publication: record, imageId: item.imageId, note: groupNote, position });
					position++;
				}
			}
		}
		assert.ok(expected.length >= 7, `${expected.length} images expected`);
		assert.equal(collector.requests.length, expected.length, JSON.stringify(collector.requests.map((r) => r.path)));
		for (const [index, want] of expected.entries()) {
			const got = collector.requests[index];
			assert.equal(got.method, 'POST');
			assert.equal(got.path, `/api/image-packs/${want.publication.pack_id}/images`);
			assert.equal(got.fields.publication_id, String(want.publication.id));
			assert.equal(got.fields.version, String(want.publication.version));
			assert.equal(got.fields.position, String(want.position));
			assert.equal(got.fields.note, want.note ?? '');
			const file = got.files.image;
			assert.ok(file, `request ${index} has the image`);
			assert.equal(file.type, 'image/png');
			assert.equal(sha256(file.bytes), images.get(want.imageId).sha256);
			assert.equal(got.headers.authorization, undefined, 'the Image Pack key never goes to the listing service');
		}
		assert.ok(!expected.some((want) => want.imageId === seen.deleted));
		const files = await emulator.control.requests({ listener: 'files' });
		assert.ok(files.every((entry) => entry.headers.authorization === undefined));
	});
});
