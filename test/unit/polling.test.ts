import { sleep } from 'n8n-workflow';

import {
	COMMIT_GRACE_MS,
	resetPollTurns,
	shortestPollGapMs,
	takeTurn,
	type PollTurn,
} from '../../nodes/ImagePack/shared/polling';

const custom = (cronExpression: string) => ({ mode: 'custom', cronExpression });

describe('shortestPollGapMs: a lower bound on the time to the next poll time', () => {
	it('one entry: n8n’s minimum of one minute', () => {
		expect(shortestPollGapMs(undefined)).toBe(60_000);
		expect(shortestPollGapMs([])).toBe(60_000);
		expect(shortestPollGapMs([{ mode: 'everyMinute' }])).toBe(60_000);
		expect(shortestPollGapMs([custom('7 */5 * * * *')])).toBe(60_000);
	});

	it('several entries at fixed seconds: the smallest gap between them, around the minute too', () => {
		const quarter = ['0', '15', '30', '45'].map((s) => custom(`${s} * * * * *`));
		expect(shortestPollGapMs(quarter)).toBe(15_000);
		expect(shortestPollGapMs([custom('50 * * * * *'), custom('5 * * * * *')])).toBe(15_000);
		expect(shortestPollGapMs([custom('10,40 0 * * * *'), custom('20 30 * * * *')])).toBe(10_000);
		// The same second in several entries fires together, then a minute later.
		expect(shortestPollGapMs([custom('0 * * * * *'), custom('0 0 * * * *')])).toBe(60_000);
		// Five fields: second 0.
		expect(shortestPollGapMs([custom('*/5 * * * *'), custom('30 * * * * *')])).toBe(30_000);
	});

	it('entries whose second n8n draws at random: one minute (the guard covers the rest)', () => {
		expect(shortestPollGapMs([{ mode: 'everyMinute' }, { mode: 'everyHour', minute: 3 }])).toBe(
			60_000,
		);
		expect(shortestPollGapMs([custom('0 * * * * *'), custom('*/10 * * * * *')])).toBe(60_000);
	});
});

describe('takeTurn: one poll per trigger at a time, in this process', () => {
	beforeEach(resetPollTurns);
	const soon = () => Date.now() + 5_000;
	const isTurn = (turn: PollTurn | string): turn is PollTurn => typeof turn !== 'string';

	it('a second poll waits for the running one to end, then skips; other triggers are not held up', async () => {
		const first = await takeTurn('wf|a', 1, soon());
		expect(isTurn(first)).toBe(true);
		const other = await takeTurn('wf|b', 1, soon());
		expect(isTurn(other)).toBe(true);
		let secondDone = false;
		const second = takeTurn('wf|a', 1, soon()).then((turn) => {
			secondDone = true;
			return turn;
		});
		await sleep(300);
		expect(secondDone).toBe(false); // it must not end before the running poll
		(first as PollTurn).release();
		expect(await second).toBe('busy');
		const third = await takeTurn('wf|a', 1, soon());
		expect(isTurn(third)).toBe(true);
	});

	it('a waiting poll gives up at its own deadline', async () => {
		const first = await takeTurn('wf|a', 1, soon());
		expect(await takeTurn('wf|a', 1, Date.now() + 250)).toBe('busy');
		expect((first as PollTurn).holds()).toBe(true);
	});

	it('after a delivery, a poll handed an older state skips until the newer one shows up', async () => {
		const first = (await takeTurn('wf|a', 3, soon())) as PollTurn;
		first.delivered(4);
		first.release();
		expect(await takeTurn('wf|a', 3, soon())).toBe('uncommitted');
		expect(await takeTurn('wf|a', undefined, soon())).toBe('uncommitted');
		const next = await takeTurn('wf|a', 4, soon());
		expect(isTurn(next)).toBe(true);
	});

	it('a delivery n8n never commits is given up after the grace period', async () => {
		const realNow = Date.now;
		try {
			const first = (await takeTurn('wf|a', 3, soon())) as PollTurn;
			first.delivered(4);
			first.release();
			const later = realNow() + COMMIT_GRACE_MS + 1;
			Date.now = () => later;
			const next = await takeTurn('wf|a', 3, later + 5_000);
			expect(isTurn(next)).toBe(true);
		} finally {
			Date.now = realNow;
		}
	});

	it('a restart (a fresh process) forgets running polls: the old one no longer holds its turn', async () => {
		const old = (await takeTurn('wf|a', 1, soon())) as PollTurn;
		resetPollTurns();
		const fresh = (await takeTurn('wf|a', 1, soon())) as PollTurn;
		expect(old.holds()).toBe(false);
		old.release(); // does not end the new one's turn
		expect(fresh.holds()).toBe(true);
	});
});
