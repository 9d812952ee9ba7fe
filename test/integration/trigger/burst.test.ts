/**
 * A bulk publish between two list requests of one poll, in real n8n poll contexts against the
 * emulator: one publication of the account commits late inside the announced overlap (within the
 * API's contract) while hundreds more commit before the poll's next page is answered. The next page
 * cannot tell which of its records were visible before (ids and published_at say nothing about
 * commit time), so the trigger must not rely on it: the late one is delivered once, nothing twice.
 */
import { emittedIds, expectOncePerPublication, range, useTrigger } from './helpers';

const { emu, host, publish, faultAfter, listRequestsArrived } = useTrigger();

describe('a bulk publish between two pages of one poll', () => {
	it.each([
		['without manifests', 200, false],
		['with manifests', 400, true],
	])(
		'%s: a late commit in the overlap below page 1, then %i more before page 2 is answered: delivered once',
		async (_name, bulk, includeManifest) => {
			// Page 1 (since 0) is full: ids 1..159 and 161..201; 160 is allocated and still pending,
			// within the overlap (50) of the newest visible id.
			await emu.control.publishBulk({ count: 159 });
			const late = await publish(undefined, undefined, false);
			await emu.control.publishBulk({ count: 41 });
			// Page 2 is held back for a moment after it arrives.
			await faultAfter('listPublications', 1, { kind: 'slow', when: 'before', delayMs: 1500 });
			const poller = host({ startFrom: 'beginning', includeManifest, maxPerPoll: 1000 });
			const activation = poller.activate();
			await listRequestsArrived(2);
			// Between page 1's answer and page 2's: the late one commits (while it is within the
			// overlap of the newest visible id, as the contract says), then a bulk publish.
			await emu.control.commitPublication(late.id);
			const { lastId } = await emu.control.publishBulk({ count: bulk });
			await activation;
			for (let polls = 0; polls < 10; polls++) await poller.tick();
			expect(emittedIds(poller.executions)).toContain(late.id);
			expectOncePerPublication(emittedIds(poller.executions), range(1, lastId));
		},
	);
});
