/**
 * The trigger's cursor: plain cases, the "now" baseline and the re-read overlap the server announces,
 * honoured in full, late commits included. One publication under two ids: cursor-repeats.test.ts;
 * seeded randomized runs against the model of the API: cursor-random.soak.test.ts.
 */
import {
	DEFAULT_OVERLAP,
	PAGE_LIMIT,
	type ListPage,
} from '../../../nodes/ImagePack/shared/publications';
import {
	MAX_REREAD,
	OverlapTooLargeError,
	addPage,
	baselineSince,
	deliverable,
	finishPoll,
	startPoll,
} from '../../../nodes/ImagePack/trigger/cursor';
import { MAX_OVERLAP, initialState } from '../../../nodes/ImagePack/trigger/state';
import {
	Model,
	baselineState,
	exactlyOnceProblems,
	newDriver,
	poll,
	readPages,
	rec,
	restart,
	handledIds,
} from './cursorModel';

describe('one poll, plain inputs', () => {
	const page = (ids: number[], next?: number, overlap = 50): ListPage => ({
		items: ids.map((id) => rec(id)),
		next_since_id: next ?? (ids.length ? ids[ids.length - 1] : 0),
		reread_overlap: overlap,
	});
	const evens = (from: number, to: number) =>
		Array.from({ length: (to - from) / 2 + 1 }, (_, i) => from + 2 * i);
	const consecutive = (from: number, to: number) =>
		Array.from({ length: to - from + 1 }, (_, i) => from + i);

	it('delivers everything new and remembers the ids it dealt with above the start', () => {
		const run = readPages(initialState('q', 0), [page([3, 7, 9])], 200);
		expect(run.fresh.map((r) => r.id)).toEqual([3, 7, 9]);
		expect(run.next).toBeNull();
		const state = finishPoll(run.run);
		expect(state).toMatchObject({ start: 0, cursor: 9, rev: 1 });
		expect(handledIds(state)).toEqual([3, 7, 9]);
	});

	it('the next poll starts `overlap` below the newest id, or above ids it dealt with', () => {
		// Other accounts' ids in between (odd): the start stops at the first one within the overlap.
		let state = finishPoll(readPages(initialState('q', 0), [page(evens(2, 200))]).run);
		expect(state.start).toBe(150);
		expect(handledIds(state)).toEqual(evens(152, 200));
		const again = readPages(state, [page(evens(152, 200))]);
		expect(again.fresh).toEqual([]);
		expect(finishPoll(again.run)).toBe(state); // unchanged: same object, no revision bump
		// Only the account's own ids: nothing in between can still appear.
		state = finishPoll(
			readPages(initialState('q', 0), [page(evens(2, 200).map((id) => id / 2))]).run,
		);
		expect(state).toMatchObject({ start: 100, handled: '' });
	});

	it('finds a late commit inside the overlap', () => {
		let state = finishPoll(readPages(initialState('q', 0), [page([1, 2, 4])]).run);
		expect(state.start).toBe(2);
		const late = readPages(state, [page([1, 2, 3, 4])]);
		expect(late.fresh.map((r) => r.id)).toEqual([3]);
		state = finishPoll(late.run);
		expect(state).toMatchObject({ start: 4, handled: '' });
	});

	it('follows next_since_id on a full page without gaps near its end; else the next page starts at the first gap within the overlap', () => {
		// The account's own consecutive ids: nothing between them can still appear.
		const dense = startPoll(initialState('q', 0));
		expect(addPage(dense, page(consecutive(1, 200)))).toBe(200);
		expect(addPage(dense, page(consecutive(201, 300)))).toBeNull();
		expect(finishPoll(dense)).toMatchObject({ start: 300, cursor: 300, handled: '' });
		// Other accounts' ids in between (odd): 351 may still commit (it is within the overlap of
		// 400), so page 2 starts there and reads 352..400 again; page 1 is then done.
		const sparse = startPoll(initialState('q', 0));
		expect(addPage(sparse, page(evens(2, 400)))).toBe(350);
		expect(addPage(sparse, page(evens(352, 750)))).toBe(700);
		expect(addPage(sparse, page(evens(702, 798)))).toBeNull();
		expect(sparse.fresh.map((r) => r.id)).toEqual(evens(2, 798)); // nothing twice
		const state = finishPoll(sparse);
		expect(state).toMatchObject({ start: 748, cursor: 798 });
		expect(handledIds(state)).toEqual(evens(750, 798));
	});

	it('a page read again from the first gap finds what committed there meanwhile; the poll delivers below it, the next poll the rest', () => {
		// Page 1: ours 1..159 and 161..201; 160 is still pending (within the overlap of 201).
		const first = [...consecutive(1, 159), ...consecutive(161, 201)];
		const run = startPoll(initialState('q', 0));
		expect(addPage(run, page(first))).toBe(159);
		// Before page 2 is answered, 160 commits and then 200 more (202..401): page 2 lists 160.
		expect(addPage(run, page([160, ...consecutive(161, 359)]))).toBe(359);
		expect(run.late).toBe(160);
		expect(deliverable(run)).toBe(159);
		const state = finishPoll(run, deliverable(run));
		expect(state.start).toBe(159);
		const next = readPages(state, [page([160, ...consecutive(161, 359)])]);
		expect(next.fresh.map((r) => r.id)).toEqual(consecutive(160, 359));
	});

	it(`at most ${MAX_REREAD} records are read again: with more, the page follows next_since_id and the next poll reads that overlap again`, () => {
		// Overlap 400, every other id ours: 200 of ours lie within the overlap of page 1's end.
		const run = startPoll(initialState('q', 0));
		expect(addPage(run, page(evens(2, 400), 400, 400))).toBe(400);
		expect(addPage(run, page(evens(402, 500), 500, 400))).toBeNull();
		const state = finishPoll(run);
		expect(state.start).toBe(0); // page 1 is settled nowhere: ids above 0 may still appear
		expect(handledIds(state)).toEqual(evens(2, 500));
	});

	it('an empty account keeps the state unchanged', () => {
		const state = initialState('q', 0);
		expect(finishPoll(readPages(state, [page([], 0)]).run)).toBe(state);
		expect(finishPoll(startPoll(state))).toBe(state);
	});

	it('ignores malformed and out-of-range items, sorts items', () => {
		const state = initialState('q', 10);
		const step = readPages(state, [
			{
				items: [rec(13), rec(5), { id: 'x' } as never, rec(12), { id: 14, pack_id: 7 } as never],
				next_since_id: 13,
			},
		]);
		expect(step.fresh.map((r) => r.id)).toEqual([12, 13]);
	});

	it('a next_since_id that does not advance on a full page stops the poll', () => {
		const next = addPage(
			startPoll(initialState('q', 0)),
			{ items: [rec(1), rec(2)], next_since_id: 0 },
			2,
		);
		expect(next).toBe(2);
		const stuck = readPages(initialState('q', 5), [{ items: [], next_since_id: 1 }], 0);
		expect(stuck.next).toBeNull();
	});

	it('uses the overlap the API announces, up to MAX_OVERLAP; above it, refuses the answer', () => {
		const ids = evens(2, 12_000);
		const startWith = (overlap: unknown) =>
			finishPoll(
				readPages(initialState('q', 0), [page(ids, 12_000, overlap as number)], 10_000).run,
			).start;
		expect(startWith(10)).toBe(12_000 - 10);
		expect(startWith(400)).toBe(12_000 - 400);
		expect(startWith(MAX_OVERLAP)).toBe(12_000 - MAX_OVERLAP);
		expect(startWith(-3)).toBe(12_000 - DEFAULT_OVERLAP);
		expect(startWith('x')).toBe(12_000 - DEFAULT_OVERLAP);
		const state = initialState('q', 0);
		const run = startPoll(state);
		expect(() => addPage(run, page(ids, 12_000, MAX_OVERLAP + 1))).toThrow(OverlapTooLargeError);
		expect(run.fresh).toEqual([]);
		expect(finishPoll(run)).toBe(state);
		expect(() => baselineSince(20_000, MAX_OVERLAP + 1)).toThrow(OverlapTooLargeError);
	});

	it('partial delivery cuts the poll below the first record not delivered', () => {
		const run = readPages(initialState('q', 0), [page([2, 4, 6, 8])]).run;
		const state = finishPoll(run, 2);
		expect(state).toMatchObject({ start: 0, cursor: 8 });
		expect(handledIds(state)).toEqual([2, 4]);
		const next = readPages(state, [page([2, 4, 6, 8])]);
		expect(next.fresh.map((r) => r.id)).toEqual([6, 8]);
		const none = finishPoll(run, 0);
		expect(none.handled).toBe('');
		expect(readPages(none, [page([2, 4, 6, 8])]).fresh.map((r) => r.id)).toEqual([2, 4, 6, 8]);
	});

	it('startId: nothing at or below it is ever delivered', () => {
		let state = initialState('q', 100);
		const step = readPages(state, [page([101, 150])]);
		state = finishPoll(step.run);
		expect(step.fresh.map((r) => r.id)).toEqual([101, 150]);
		expect(state.start).toBeGreaterThanOrEqual(100);
	});
});

describe('baseline for "now"', () => {
	it('treats the overlap below the newest id as delivered, page after page; a late commit inside it is delivered', () => {
		const model = new Model(1000);
		for (let i = 0; i < 1500; i++) model.commit(model.allocate(i % 3 ? 'a' : 'b'));
		const late = model.allocate('a');
		for (let i = 0; i < 900; i++) model.commit(model.allocate('a'));
		const head = model.maxVisible;
		const since = baselineSince(head, 1000);
		const pages: ListPage[] = [];
		for (let at = since, full = true; full; ) {
			const answer = model.list('a', at, PAGE_LIMIT);
			pages.push(answer);
			full = answer.items.length === PAGE_LIMIT;
			at = answer.next_since_id;
		}
		expect(pages.length).toBeGreaterThan(4);
		const driver = newDriver(baselineState('now', since, pages, PAGE_LIMIT, head));
		expect(poll(model, 'a', driver)).toEqual([]);
		model.commit(late); // 900 ids below the head
		model.commit(model.allocate('a'));
		expect(poll(model, 'a', driver).map((r) => r.id)).toEqual([late, head + 1]);
	});
});

describe('the re-read overlap the server announces, in full', () => {
	const layouts = {
		'only this account': () => 'a',
		'every third id another account': (i: number) => (i % 3 ? 'a' : 'b'),
	};
	it.each([100, 400, 1000, MAX_OVERLAP])(
		'overlap %i: late commits up to the whole overlap below the head are delivered, polled while pending; Max per Poll, restarts',
		(overlap) => {
			for (const [layout, owner] of Object.entries(layouts))
				for (const below of [Math.floor(overlap * 0.75), overlap - 1])
					for (const [maxPerPoll, restarts] of [
						[undefined, false],
						[100, true],
					] as const) {
						const variant = JSON.stringify({ layout, below, maxPerPoll, restarts });
						const model = new Model(overlap);
						const driver = newDriver();
						const drain = () => {
							for (let i = 0; i < 500 && poll(model, 'a', driver, 50, maxPerPoll).length; i++)
								if (restarts) restart(driver);
						};
						for (let i = 0; i < overlap + 300; i++) model.commit(model.allocate(owner(i)));
						drain();
						const late = model.allocate('a');
						for (let i = 0; i < below; i++) {
							model.commit(model.allocate(owner(i)));
							// polled every few publications while the late one is pending
							if (i % Math.ceil(overlap / 16) === 0) poll(model, 'a', driver, 50, maxPerPoll);
						}
						drain();
						const before = driver.emitted.length;
						model.commit(late); // `below` ids under the newest
						drain();
						const problems = exactlyOnceProblems(model, 'a', driver);
						expect({ variant, problems }).toEqual({ variant, problems: [] });
						expect({ variant, late: driver.emitted.slice(before).map((r) => r.id) }).toEqual({
							variant,
							late: [late],
						});
					}
		},
	);
});
