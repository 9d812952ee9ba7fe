/**
 * A poll cut short by its time delivers what it has (issue #40), in real n8n poll contexts against
 * the emulator: a catch-up of publications with 40-image manifests at a poll every 5 seconds, with a
 * slow server. A poll that reaches its time bound never fails for it: it delivers what is complete
 * (also the manifests of a batch answered before the cut request), keeps the cursor consistent and
 * leaves the rest to the next poll, each publication once. Only a server that is too slow poll after
 * poll (STALLED_POLLS in a row with nothing complete) fails a poll, saying so.
 */
import { STALLED_POLLS } from '../../../nodes/ImagePack/trigger/poll';
import { pollLog } from '../../harness/n8n';
import { emittedIds, expectOrderedBatches, range, useTrigger } from './helpers';

const { emu, host, faultAfter } = useTrigger();

beforeEach(() => {
	pollLog.length = 0;
});

/** Every delivered id once, and together the ids 1..n for some n (nothing skipped). */
function expectPrefixOnce(delivered: number[]) {
	expect(delivered).toEqual(range(1, delivered.length));
}

describe('a poll cut short delivers what it has (#40)', () => {
	it('10,000 publications, 40-image manifests, a poll every 5 s, a slow server and a list request that hangs: no poll fails', async () => {
		await emu.control.publishBulk({ count: 10_000, images: 40 });
		await emu.control.setLatency('listPublications', 300);
		await emu.control.setLatency('getPublication', 300);
		// Poll times 5 s apart: a poll stops starting requests at 4 s and cuts what runs at 4.75 s.
		const poller = host({ startFrom: 'beginning' }, { budget: 5000 });
		const first = await poller.activate();
		expect(first.kind).toBe('emitted');
		// The next poll's list request hangs past the poll's time: cut at 4.75 s.
		await faultAfter('listPublications', 0, { kind: 'slow', when: 'before', delayMs: 8000 });
		const cut = await poller.tick();
		expect(cut).toEqual({ kind: 'null' });
		expect(pollLog.map((entry) => entry.level)).toEqual(['warn']);
		expect(pollLog[0].message).toMatch(
			/ran out of its time \(4\.8 seconds\) before a publication was complete \(.*did not answer within 4\.\d seconds.*\)\. Nothing was delivered or skipped/,
		);
		expect(await poller.tick()).toMatchObject({ kind: 'emitted' });
		expect(poller.errors).toEqual([]);
		const delivered = emittedIds(poller.executions);
		expectPrefixOnce(delivered);
		expect(delivered.length).toBeGreaterThan(50);
		expectOrderedBatches(poller.executions);
		for (const item of poller.executions.flat()) {
			const blocks = (item.json.manifest as { blocks: Array<{ items?: unknown[] }> }).blocks;
			expect(blocks.flatMap((block) => block.items ?? [])).toHaveLength(40);
		}
	}, 60_000);

	it('the first manifests of a poll: those answered before the cut one are delivered, the rest next poll', async () => {
		await emu.control.publishBulk({ count: 10, images: 40 });
		// The 3rd manifest of the poll's first batch (4 at once) hangs past the poll's time.
		await faultAfter('getPublication', 2, { kind: 'slow', when: 'before', delayMs: 8000 });
		const poller = host({ startFrom: 'beginning' }, { budget: 1500 });
		const outcome = await poller.activate();
		expect(outcome.kind === 'emitted' && emittedIds([outcome.items])).toEqual([1, 2]);
		await poller.tick();
		expect(emittedIds(poller.executions)).toEqual(range(1, 10));
	});

	it(`a server too slow poll after poll: ${STALLED_POLLS - 1} polls return nothing (logged), the next fails saying so; nothing lost after`, async () => {
		await emu.control.publishBulk({ count: 30 });
		const poller = host({ startFrom: 'beginning', includeManifest: false }, { budget: 1000 });
		await poller.activate();
		await emu.control.publishBulk({ count: 5 });
		await emu.control.setLatency('listPublications', 3000);
		const stored = poller.stored;
		const outcomes = [];
		for (let polls = 0; polls < STALLED_POLLS; polls++) outcomes.push((await poller.tick()).kind);
		expect(outcomes).toEqual([...Array(STALLED_POLLS - 1).fill('null'), 'error']);
		expect(pollLog.filter((entry) => entry.level === 'warn')).toHaveLength(STALLED_POLLS - 1);
		expect(poller.errors[0].message).toMatch(
			new RegExp(
				`answered too slowly for the trigger: ${STALLED_POLLS} polls in a row ran out of their time \\(\\d\\.\\d seconds each\\)`,
			),
		);
		expect(poller.stored).toBe(stored);
		await emu.control.setLatency('listPublications', 0);
		await poller.tick();
		expect(emittedIds(poller.executions)).toEqual(range(1, 35));
	});
});
