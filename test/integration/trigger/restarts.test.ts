/**
 * The Image Pack Trigger in real n8n poll contexts (n8n-core 2.41 PollContext, n8n-workflow
 * Workflow and ObservableObject static data) against the API emulator, with static data carried
 * and persisted the way n8n 2.41 does it (test/harness/polling.ts): restarts, parameter changes, and one publication listed under two ids (the pure cursor's tests cover every distance and interleaving).
 */
import { emittedIds, useTrigger } from './helpers';

const { emu, host, publish } = useTrigger();

describe('restarts, parameters', () => {
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
});

describe('the same publication listed under two ids', () => {
	it('read in one window, the first id leaves it, the second is re-read after a restart: delivered once', async () => {
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
});
