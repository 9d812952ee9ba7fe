/**
 * The trigger's cursor with one publication listed under more than one id (the API says to dedupe by
 * (pack_id, version)): at every distance, late either way, across pages, cuts and restarts, and the
 * bounded memory of delivered publications.
 */
import { PAGE_LIMIT } from '../../../nodes/ImagePack/shared/publications';
import {
	addPage,
	baselineSince,
	finishPoll,
	startPoll,
} from '../../../nodes/ImagePack/trigger/cursor';
import { MEMORY_KEYS, initialState } from '../../../nodes/ImagePack/trigger/state';
import {
	Model,
	baselineState,
	exactlyOnceProblems,
	expectExactlyOnce,
	keyOf,
	newDriver,
	poll,
	readPages,
	rec,
	restart,
	handledIds,
} from './cursorModel';

describe('the same publication under two ids', () => {
	/** Account a: ids 1..count, all committed; `copies` maps a copy's id to the id it repeats. */
	function listing(count: number, copies: Record<number, number>) {
		const model = new Model();
		for (let id = 1; id <= count; id++) {
			model.commit(id in copies ? model.duplicate(copies[id]) : model.allocate('a'));
		}
		return model;
	}

	it('regression: read in one window, the first id leaves it, the second is re-read (one page)', () => {
		const model = listing(100, { 70: 10 });
		const driver = newDriver();
		expect(poll(model, 'a', driver)).toHaveLength(99);
		expect(poll(model, 'a', driver)).toEqual([]); // re-reads 51..100, including 70
		expectExactlyOnce(model, 'a', driver);
	});

	it('regression: across a page boundary', () => {
		const model = listing(300, { 250: 120 });
		const driver = newDriver();
		expect(poll(model, 'a', driver)).toHaveLength(299);
		expect(poll(model, 'a', driver)).toEqual([]);
		expectExactlyOnce(model, 'a', driver);
	});

	it('regression: across polls and a restart from saved static data', () => {
		const model = listing(60, { 60: 5 });
		const driver = newDriver();
		poll(model, 'a', driver);
		for (let i = 0; i < 30; i++) model.commit(model.allocate('a'));
		restart(driver);
		poll(model, 'a', driver);
		restart(driver);
		for (let i = 0; i < 30; i++) model.commit(model.allocate('a'));
		poll(model, 'a', driver);
		expectExactlyOnce(model, 'a', driver);
	});

	it('regression: on a partial delivery cut', () => {
		const model = listing(100, { 90: 10 });
		const driver = newDriver();
		expect(poll(model, 'a', driver, 50, 85)).toHaveLength(85);
		for (let i = 0; i < 5; i++) poll(model, 'a', driver);
		expectExactlyOnce(model, 'a', driver);
	});

	it('regression: in the "now" baseline (neither id is delivered)', () => {
		const model = listing(200, { 190: 160 });
		const since = baselineSince(model.maxVisible);
		const driver = newDriver(baselineState('q', since, model.list('a', since, PAGE_LIMIT)));
		for (let i = 0; i < 20; i++) model.commit(model.allocate('a'));
		expect(poll(model, 'a', driver)).toHaveLength(20);
		for (let i = 0; i < 20; i++) model.commit(model.allocate('a'));
		expect(poll(model, 'a', driver)).toHaveLength(20);
		expect(driver.emitted.every((r) => r.id > 200)).toBe(true);
	});

	it('beyond the window: a copy hundreds of publications later is recognised by the memory', () => {
		const model = listing(10, {});
		const driver = newDriver();
		poll(model, 'a', driver);
		for (let i = 0; i < 600; i++) {
			model.commit(model.allocate('a'));
			if (i % 37 === 0) poll(model, 'a', driver);
		}
		model.commit(model.duplicate(3));
		poll(model, 'a', driver);
		restart(driver);
		model.commit(model.duplicate(7));
		poll(model, 'a', driver);
		expectExactlyOnce(model, 'a', driver);
	});

	const distances = [1, 2, 10, 49, 50, 51, 100, 101, 199, 200, 201, 400];
	it.each(distances)(
		'distance %i: both visible, or either committed late; pages of 200 and 7; partial deliveries; restarts',
		(distance) => {
			for (const late of ['none', 'first', 'second'] as const)
				for (const pageLimit of [PAGE_LIMIT, 7])
					for (const [emitLimit, restarts] of [
						[undefined, false],
						[3, true],
					] as const) {
						const variant = JSON.stringify({ late, pageLimit, emitLimit, restarts });
						const model = new Model();
						const driver = newDriver();
						let polls = 0;
						const drive = () => {
							// every other poll delivers only `emitLimit` (a cut), so the backlog stays small
							const limit = polls++ % 2 ? emitLimit : undefined;
							poll(model, 'a', driver, 50, limit, undefined, pageLimit);
							if (restarts) restart(driver);
						};
						let first = 0;
						let second = 0;
						for (let step = 0; step < distance + 120; step++) {
							let id: number;
							if (step === 20) id = first = model.allocate('a');
							else if (first && !second && model.nextId === first + distance)
								id = second = model.duplicate(first);
							else id = model.allocate(step % 4 === 3 ? 'b' : 'a');
							if (!(late === 'first' && id === first) && !(late === 'second' && id === second))
								model.commit(id);
							if (second && model.nextId === second + 4)
								model.commit(late === 'first' ? first : second);
							if (step % 5 === 4) drive();
						}
						model.commitAll();
						for (
							let i = 0;
							i < 200 && poll(model, 'a', driver, 50, emitLimit, undefined, pageLimit).length;
							i++
						);
						const problems = exactlyOnceProblems(model, 'a', driver);
						expect({ variant, problems }).toEqual({ variant, problems: [] });
					}
		},
	);
});

describe('the memory of delivered publications', () => {
	it(`documented limit: a copy after more than ${MEMORY_KEYS} later deliveries is delivered again`, () => {
		const model = new Model();
		model.commit(model.allocate('a'));
		const driver = newDriver();
		poll(model, 'a', driver);
		for (let i = 0; i < MEMORY_KEYS; i++) model.commit(model.allocate('a'));
		poll(model, 'a', driver);
		model.commit(model.duplicate(2)); // remembered: the last MEMORY_KEYS deliveries
		expect(poll(model, 'a', driver)).toEqual([]);
		model.commit(model.duplicate(1));
		expect(poll(model, 'a', driver).map(keyOf)).toEqual([keyOf(model.all.get(1)!)]);
	});

	it('a server that lists every delivered publication again under new ids: none again, the state small', () => {
		const keys = (from: number, to: number) =>
			Array.from({ length: to - from + 1 }, (_, i) => from + i);
		const pages = [keys(1, 200), keys(201, 400), [0, ...keys(1, 199)], keys(200, 399), [400]];
		const run = startPoll(initialState('q', 0));
		let id = 0;
		for (const page of pages) {
			const items = page.map((k) => rec(++id, `pk_${k}`));
			addPage(run, { items, next_since_id: id });
		}
		expect(run.fresh.map((r) => r.pack_id)).toEqual([
			...keys(1, 400).map((k) => `pk_${k}`),
			'pk_0',
		]);
		const state = finishPoll(run, 400); // cut below pk_0
		expect(state.start).toBe(400);
		expect(handledIds(state)).toEqual([]);
		expect(Buffer.byteLength(JSON.stringify(state))).toBeLessThan(4 * 1024);
		const again = readPages(state, [
			{ items: keys(1, 400).map((k) => rec(state.start + k, `pk_${k}`)), next_since_id: 1 },
		]);
		expect(again.fresh).toEqual([]);
		expect(
			readPages(state, [{ items: [rec(state.start + 1, 'pk_0')], next_since_id: 1 }]).fresh,
		).toHaveLength(1);
	});
});
