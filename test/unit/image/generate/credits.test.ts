/**
 * The caps that reserve before a generation is sent, alone: Max Credits per Hour (HourlyCaps:
 * synchronous reservation, settlement, the sliding hour) and per Execution (ExecutionLedger).
 */
import {
	ExecutionLedger,
	HOUR_MS,
	HourlyCaps,
} from '../../../../nodes/ImagePack/actions/image/generate/credits';

describe('HourlyCaps', () => {
	let now = 0;
	const caps = () => new HourlyCaps(() => now);
	beforeEach(() => {
		now = 5 * HOUR_MS;
	});

	it('reserves synchronously up to the cap, per node, and refuses what would pass it', () => {
		const cap = caps();
		expect(cap.reserve('wf node', 12, 36).ok).toBe(true);
		expect(cap.reserve('wf node', 12, 36).ok).toBe(true);
		expect(cap.reserve('wf node', 12, 36).ok).toBe(true);
		const refused = cap.reserve('wf node', 12, 36);
		expect(refused).toEqual({ ok: false, spent: 36, freesInMs: HOUR_MS });
		expect(cap.reserve('wf other', 12, 36).ok).toBe(true);
	});

	it('settles with what was charged: a refund frees the reservation', () => {
		const cap = caps();
		const first = cap.reserve('n', 30, 40);
		if (!first.ok) throw new Error('reserved');
		expect(cap.reserve('n', 30, 40).ok).toBe(false);
		cap.settle(first.spend, 0);
		expect(cap.reserve('n', 30, 40).ok).toBe(true);
	});

	it('slides: credits come back an hour after they were spent, and the refusal says when', () => {
		const cap = caps();
		cap.reserve('n', 20, 40);
		now += 10 * 60_000;
		cap.reserve('n', 20, 40);
		const refused = cap.reserve('n', 20, 40);
		expect(refused).toEqual({ ok: false, spent: 40, freesInMs: 50 * 60_000 });
		now += 50 * 60_000 + 1;
		expect(cap.reserve('n', 20, 40).ok).toBe(true);
	});

	it('tracks at most maxNodes nodes (the least recently used is forgotten)', () => {
		const cap = new HourlyCaps(() => now, 2);
		cap.reserve('a', 10, 10);
		cap.reserve('b', 10, 10);
		cap.reserve('c', 10, 10);
		expect(cap.reserve('a', 10, 10).ok).toBe(true);
		expect(cap.reserve('c', 10, 10).ok).toBe(false);
	});
});

describe('ExecutionLedger', () => {
	it('reserves up to the cap (0: none), refuses what would pass it, and settles with the charge', () => {
		const store = {};
		const ledger = new ExecutionLedger(store);
		expect(ledger.reserve(30, 50)).toBe(true);
		expect(ledger.reserve(30, 50)).toBe(false); // refused: nothing reserved
		expect(ledger.spent).toBe(30);
		ledger.settle(30, 12);
		expect(ledger.spent).toBe(12);
		expect(new ExecutionLedger(store).spent).toBe(12); // it lives in the store
		expect(ledger.reserve(1000, 0)).toBe(true);
		ledger.settle(1000, 0);
		expect(ledger.spent).toBe(12);
	});
});
