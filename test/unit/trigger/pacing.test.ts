/** The trigger's pacing: its times within a poll, and one poll per trigger at a time. */
import type { IPollFunctions } from 'n8n-workflow';
import { sleep } from 'n8n-workflow';

import {
	COMMIT_GRACE_MS,
	pollTimes,
	takeTurn,
	type PollTurn,
} from '../../../nodes/ImagePack/trigger/pacing';

const custom = (cronExpression: string) => ({ mode: 'custom', cronExpression });

/** The window pollTimes gives a poll with these Poll Times entries and this poll budget. */
function window(item: Array<Record<string, unknown>> | undefined, budget?: number): number {
	const ctx = {
		getNodeParameter: () => ({ item }),
		...(budget === undefined ? {} : { getPollBudgetMs: () => budget }),
	} as unknown as IPollFunctions;
	const { stopAt, deadline } = pollTimes(ctx);
	return Math.round((deadline - stopAt) / 0.15);
}
const shortestPollGapMs = (item: Array<Record<string, unknown>> | undefined) => window(item);

describe('pollTimes: 80 % / 95 % of the poll budget or of the time to the next poll time', () => {
	it('the shorter of the two; a budget n8n does not give (older n8n) or a nonsense one is no bound', () => {
		expect(window(undefined, 36_000)).toBe(36_000);
		expect(window([custom('0 * * * * *'), custom('30 * * * * *')], 36_000)).toBe(30_000);
		expect(window(undefined, 0)).toBe(60_000);
		expect(window(undefined, Number.NaN)).toBe(60_000);
		const now = Date.now();
		const { stopAt, deadline } = pollTimes({ getNodeParameter: () => ({}) } as never);
		expect(stopAt - now).toBeGreaterThanOrEqual(48_000);
		expect(deadline - now).toBeLessThanOrEqual(57_000 + 50);
	});
});

describe('the time to the next poll time: a lower bound', () => {
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
	// Each test its own trigger keys: the turns live in this process.
	let test = 0;
	beforeEach(() => test++);
	const key = (name: string) => `wf${test}|${name}`;
	const soon = () => Date.now() + 5_000;
	const isTurn = (turn: PollTurn | string): turn is PollTurn => typeof turn !== 'string';

	it('a second poll waits for the running one to end, then skips; other triggers are not held up', async () => {
		const first = await takeTurn(key('a'), 1, soon());
		expect(isTurn(first)).toBe(true);
		const other = await takeTurn(key('b'), 1, soon());
		expect(isTurn(other)).toBe(true);
		let secondDone = false;
		const second = takeTurn(key('a'), 1, soon()).then((turn) => {
			secondDone = true;
			return turn;
		});
		await sleep(300);
		expect(secondDone).toBe(false); // it must not end before the running poll
		(first as PollTurn).release();
		expect(await second).toBe('busy');
		const third = await takeTurn(key('a'), 1, soon());
		expect(isTurn(third)).toBe(true);
	});

	it('a waiting poll gives up at its own deadline', async () => {
		const first = await takeTurn(key('a'), 1, soon());
		expect(await takeTurn(key('a'), 1, Date.now() + 250)).toBe('busy');
		expect((first as PollTurn).holds()).toBe(true);
	});

	it('after a delivery, a poll handed an older state skips until the newer one shows up', async () => {
		const first = (await takeTurn(key('a'), 3, soon())) as PollTurn;
		first.delivered(4);
		first.release();
		expect(await takeTurn(key('a'), 3, soon())).toBe('uncommitted');
		expect(await takeTurn(key('a'), undefined, soon())).toBe('uncommitted');
		const next = await takeTurn(key('a'), 4, soon());
		expect(isTurn(next)).toBe(true);
	});

	it('a delivery n8n never commits is given up after the grace period', async () => {
		const realNow = Date.now;
		try {
			const first = (await takeTurn(key('a'), 3, soon())) as PollTurn;
			first.delivered(4);
			first.release();
			const later = realNow() + COMMIT_GRACE_MS + 1;
			Date.now = () => later;
			const next = await takeTurn(key('a'), 3, later + 5_000);
			expect(isTurn(next)).toBe(true);
		} finally {
			Date.now = realNow;
		}
	});

	it('a poll still running 10 minutes past its deadline is taken over; its release leaves the new turn', async () => {
		const realNow = Date.now;
		try {
			const old = (await takeTurn(key('a'), 1, soon())) as PollTurn;
			const later = realNow() + 5_000 + 10 * 60_000 + 1;
			Date.now = () => later;
			const fresh = (await takeTurn(key('a'), 1, later + 5_000)) as PollTurn;
			expect(isTurn(fresh)).toBe(true);
			expect(old.holds()).toBe(false);
			old.release(); // does not end the new one's turn
			expect(fresh.holds()).toBe(true);
		} finally {
			Date.now = realNow;
		}
	});

	it('counts the polls of a trigger in a row that ran out of time with nothing complete; any other poll resets it', async () => {
		const poll = async (name: string, nothingComplete: boolean) => {
			const turn = (await takeTurn(key(name), 1, soon())) as PollTurn;
			try {
				return turn.ranOut(nothingComplete);
			} finally {
				turn.release();
			}
		};
		expect(await poll('a', true)).toBe(1);
		expect(await poll('a', true)).toBe(2);
		expect(await poll('b', true)).toBe(1); // another trigger counts on its own
		expect(await poll('a', false)).toBe(0);
		expect(await poll('a', true)).toBe(1);
	});
});
