/**
 * The Image Pack Trigger in real n8n poll contexts (n8n-core 2.41 PollContext, n8n-workflow
 * Workflow and ObservableObject static data) against the API emulator, with static data carried
 * and persisted the way n8n 2.41 does it (test/harness/polling.ts): restarts, saved states of earlier releases, parameter changes, and one publication listed under two ids.
 */
import { STATE_VERSION, hash53 } from '../../../nodes/ImagePack/shared/cursor';
import { emittedIds, expectOncePerPublication, expectOrderedBatches, useTrigger } from './helpers';

const OVERLAP = 50;

const { emu, host, durableHost, publish } = useTrigger();

describe('overlap, restarts, parameters', () => {
	it('a poll that starts while the previous one is still running does not emit the same publications', async () => {
		await publish();
		const poller = host({ startFrom: 'beginning', includeManifest: false });
		await poller.activate();
		for (let i = 0; i < 30; i++) await publish();
		await emu.control.setLatency('listPublications', 100);
		const outcomes = await Promise.all([poller.tick(), poller.tick(), poller.tick()]);
		await emu.control.setLatency('listPublications', 0);
		expect(outcomes.filter((o) => o.kind === 'emitted')).toHaveLength(1);
		await poller.tick();
		expect(emittedIds(poller.executions)).toEqual(Array.from({ length: 31 }, (_, i) => i + 1));
	});

	it('a state saved by the previous release (version 1) continues: nothing lost, nothing again', async () => {
		const long = `pk_${'x'.repeat(30)}`; // its version 1 key was stored as a hash
		for (let id = 1; id <= 118; id++) await publish(undefined, id === 100 ? long : undefined);
		const late = await publish(undefined, undefined, false);
		await publish();
		// What e7dcad1's trigger saved after delivering 1..118 and 120 (window above 120 - 50).
		const seen: Record<string, number> = {};
		for (let id = 71; id <= 120; id++) {
			if (id === late.id) continue;
			const { pack_id, version } = await emu.control.getPublication(id);
			const key = `${pack_id}@${version}`;
			seen[key.length <= 24 ? key : `#${hash53(key)}`] = id;
		}
		const queryKey = `beginning|${hash53(emu.baseUrl.toLowerCase())}`;
		const v1 = { v: 1, queryKey, start: 70, cursor: 120, overlap: 50, seen, rev: 4 };
		const poller = host(
			{ startFrom: 'beginning', includeManifest: false },
			{ stored: JSON.stringify({ 'node:Image Pack Trigger': v1 }) },
		);
		await emu.control.commitPublication(late.id);
		await emu.control.repeatPublication(100); // the long-keyed publication listed again
		const next = await publish();
		await poller.activate();
		await poller.tick();
		expect(emittedIds(poller.executions)).toEqual([late.id, next.id]);
		expect(JSON.parse(poller.stored)['node:Image Pack Trigger']).toMatchObject({
			v: STATE_VERSION,
		});
	});

	it('changes made by polls that returned null are not stored; a restart re-reads and dedupes', async () => {
		await emu.control.publishBulk({ count: 120 });
		const poller = host({ startFrom: 'beginning', includeManifest: false, maxPerPoll: 200 });
		await poller.activate();
		const storedAfterEmit = poller.stored;
		await poller.tick(); // null: nothing stored
		expect(poller.stored).toBe(storedAfterEmit);
		await poller.restart();
		await poller.tick();
		expect(emittedIds(poller.executions)).toEqual(Array.from({ length: 120 }, (_, i) => i + 1));
	});

	it('changing Start From (or Start ID) starts over; Include Manifest does not', async () => {
		for (let i = 0; i < 10; i++) await publish();
		const poller = host({ startFrom: 'beginning', includeManifest: false });
		await poller.activate();
		expect(emittedIds(poller.executions)).toHaveLength(10);
		await poller.update({ startFrom: 'beginning', includeManifest: true });
		await poller.tick();
		expect(emittedIds(poller.executions)).toHaveLength(10);
		await poller.update({ startFrom: 'id', startId: 7, includeManifest: false });
		expect(emittedIds(poller.executions).slice(10)).toEqual([8, 9, 10]);
		await poller.update({ startFrom: 'now', includeManifest: false });
		await publish();
		await poller.tick();
		expect(emittedIds(poller.executions).slice(13)).toEqual([11]);
	});

	it('state is kept per node name: a renamed node starts fresh ("now": no flood)', async () => {
		for (let i = 0; i < 10; i++) await publish();
		const poller = host({ startFrom: 'now', includeManifest: false });
		await poller.activate();
		await poller.update({ startFrom: 'now', includeManifest: false }, 'Renamed');
		await poller.tick();
		expect(poller.executions).toEqual([]);
		expect(Object.keys(JSON.parse(poller.stored))).toEqual(
			expect.arrayContaining(['node:Renamed']),
		);
	});

	it("n8n's durable-cursor path (staged copy per poll) delivers exactly once too", async () => {
		const durable = durableHost({ startFrom: 'beginning', includeManifest: false });
		await emu.control.publishBulk({ count: 30 });
		await durable.activate();
		const late = await publish(undefined, undefined, false);
		await publish();
		await durable.tick();
		await emu.control.commitPublication(late.id);
		await durable.tick();
		await durable.tick();
		const got = emittedIds(durable.executions);
		expect([...got].sort((a, b) => a - b)).toEqual(Array.from({ length: 32 }, (_, i) => i + 1));
		expect(new Set(got).size).toBe(32);
	});
});

describe('the same publication listed under two ids', () => {
	it('regression: read in one window, the first id leaves it, the second is re-read', async () => {
		// Ours: ids 1..100, where id 70 lists the publication of id 10 again.
		await publish();
		for (let id = 2; id <= 100; id++) {
			if (id === 70) await emu.control.repeatPublication(10);
			else await publish();
		}
		const poller = host({ startFrom: 'beginning', includeManifest: false });
		await poller.activate();
		await poller.restart();
		const last = await publish();
		await poller.tick();
		await poller.tick();
		const want = Array.from({ length: 100 }, (_, i) => i + 1).filter((id) => id !== 70);
		expect(emittedIds(poller.executions)).toEqual([...want, last.id]);
	});

	// Every distance in between is covered by the pure cursor's tests (test/unit/cursor.test.ts).
	const distances = [1, 50, 51, 201, 400];
	it.each(distances)(
		'distance %i: both visible or either committed late, with and without manifests, restarts',
		async (distance) => {
			for (const late of ['none', 'first', 'second'] as const) {
				await emu.control.reset();
				const includeManifest = late === 'second';
				const poller = host({ startFrom: 'beginning', includeManifest });
				const restart = distance % 2 === 1;
				const tick = async () => {
					if (restart) await poller.restart();
					await poller.tick();
				};
				await emu.control.publishBulk({ count: 20 });
				await poller.activate();
				const first = await publish(undefined, undefined, late !== 'first');
				// The contract: a pending id stays within the overlap of the newest visible id.
				const before = Math.min(distance - 1, OVERLAP - 10);
				if (before) await emu.control.publishBulk({ count: before });
				await tick();
				if (late === 'first') await emu.control.commitPublication(first.id);
				if (distance - 1 > before) await emu.control.publishBulk({ count: distance - 1 - before });
				const copy = await emu.control.repeatPublication(first.id, { commit: late !== 'second' });
				expect(copy.id - first.id).toBe(distance);
				await emu.control.publishBulk({ count: 30 });
				await tick();
				if (late === 'second') await emu.control.commitPublication(copy.id);
				await publish();
				for (let i = 0; i < 3; i++) await tick();
				const all = Array.from({ length: copy.id + 31 }, (_, i) => i + 1);
				const got = emittedIds(poller.executions);
				expectOncePerPublication(got, all, (id) => (id === copy.id ? `#${first.id}` : undefined));
				expectOrderedBatches(poller.executions);
			}
		},
		60_000,
	);
});
