/**
 * When a poll may run and for how long: its turn and its times (docs/polling.md has the whole story).
 *
 * Two polls of one trigger can run at once in one process under both of n8n's schedulers (legacy: a
 * poll time fires whether or not the previous poll still runs; durable: a poll per task, each with
 * its own copy of the stored cursor). The turn serialises them by what identifies the trigger, not by
 * the state object: a poll that finds another one running waits for it to end, then skips (on the
 * legacy scheduler a poll that ends first takes the running one's expression engine away). A poll
 * whose state copy is older than what this process last delivered skips until n8n has committed that
 * delivery. Nothing here sees a poll of another process (several mains).
 */
import type { IPollFunctions } from 'n8n-workflow';
import { sleep } from 'n8n-workflow';

/** How long a delivery may take to show up in the state n8n hands the next poll. */
export const COMMIT_GRACE_MS = 2 * 60_000;
/** A poll still running this long after its deadline is taken to be lost; its result is discarded. */
const STALE_AFTER_MS = 10 * 60_000;
/** How often a waiting poll looks whether the running one has ended. */
const WAIT_STEP_MS = 200;
/** Registry size above which expired entries are swept. */
const SWEEP_ABOVE = 256;

interface Running {
	/** Set when the poll ends (returned or threw). */
	ended: boolean;
	staleAt: number;
}

const running = new Map<string, Running>();
/** Polls in a row, per trigger, that ran out of time before anything was complete. */
const stalls = new Map<string, number>();
/** The state revision each trigger last delivered from this process, until n8n shows it committed. */
const delivered = new Map<string, { rev: number; until: number }>();

function sweep(now: number): void {
	if (delivered.size > SWEEP_ABOVE) {
		for (const [key, entry] of delivered) if (entry.until <= now) delivered.delete(key);
	}
	if (running.size > SWEEP_ABOVE) {
		for (const [key, entry] of running) if (entry.staleAt <= now) running.delete(key);
	}
	if (stalls.size > SWEEP_ABOVE) stalls.clear();
}

export interface PollTurn {
	/** False once another poll took over this trigger (this one ran past STALE_AFTER_MS). */
	holds(): boolean;
	/** Records that this poll delivered the state with this revision (called before returning items). */
	delivered(rev: number): void;
	/**
	 * Records how this poll ended: `true` when its time ran out before anything was complete.
	 * Returns how many polls of the trigger in a row ended so, this one included (0 if not).
	 */
	ranOut(nothingComplete: boolean): number;
	/** Ends the turn; always call it (finally). */
	release(): void;
}

export type TurnRefusal = 'busy' | 'uncommitted';

/**
 * Takes this poll's turn for the trigger `key`, or tells why it must skip:
 * - `busy`: another poll of the trigger was running; this one waited until it ended (or until this
 *   poll's own deadline) so that it never ends before it;
 * - `uncommitted`: the state this poll was handed (`storedRev`) is older than what this process last
 *   delivered, and n8n has not committed that delivery yet (or never will: then, after
 *   COMMIT_GRACE_MS, the stored state is trusted again and the window is read anew).
 */
export async function takeTurn(
	key: string,
	storedRev: number | undefined,
	deadline: number,
): Promise<PollTurn | TurnRefusal> {
	const now = Date.now();
	sweep(now);
	const other = running.get(key);
	if (other && other.staleAt > now) {
		while (!other.ended && running.get(key) === other && Date.now() < deadline) {
			await sleep(Math.min(WAIT_STEP_MS, Math.max(1, deadline - Date.now())));
		}
		return 'busy';
	}
	const last = delivered.get(key);
	if (last && last.until > now && (storedRev ?? -1) < last.rev) return 'uncommitted';
	if (last) delivered.delete(key);

	const mine: Running = {
		ended: false,
		staleAt: (Number.isFinite(deadline) ? deadline : now + STALE_AFTER_MS) + STALE_AFTER_MS,
	};
	running.set(key, mine);
	return {
		holds: () => running.get(key) === mine,
		delivered(rev) {
			delivered.set(key, { rev, until: Date.now() + COMMIT_GRACE_MS });
		},
		ranOut(nothingComplete) {
			if (!nothingComplete) {
				stalls.delete(key);
				return 0;
			}
			const count = (stalls.get(key) ?? 0) + 1;
			stalls.set(key, count);
			return count;
		},
		release() {
			mine.ended = true;
			if (running.get(key) === mine) running.delete(key);
		},
	};
}

/** One entry of n8n's Poll Times parameter. */
interface PollTimeItem {
	mode?: string;
	cronExpression?: string;
}

/** n8n's minimum interval between two poll times of one entry. */
const MINUTE_MS = 60_000;

/** The seconds a cron expression fires at, or undefined when it cannot be told from the expression. */
function cronSeconds(expression: string): number[] | undefined {
	const fields = expression.trim().split(/\s+/);
	if (fields.length === 5) return [0];
	if (fields.length !== 6) return undefined;
	const seconds: number[] = [];
	for (const part of fields[0].split(',')) {
		if (!/^\d{1,2}$/.test(part) || Number(part) > 59) return undefined;
		seconds.push(Number(part));
	}
	return seconds;
}

/**
 * A lower bound on the time between two consecutive poll times: one minute for a single entry (n8n
 * refuses anything more frequent), else the smallest gap between the distinct seconds the entries fire
 * at. Two distinct poll times less than a minute apart fire at seconds that far apart (mod 60), so the
 * bound holds whatever the minutes, hours, days and time zone. Entries whose second n8n picks at random
 * (every minute, every hour …) cannot be told apart from here: then one minute is assumed and the poll
 * guard covers a poll time that fires sooner.
 */
function shortestPollGapMs(items: PollTimeItem[] | undefined): number {
	if (!items || items.length < 2) return MINUTE_MS;
	const seconds = new Set<number>();
	for (const item of items) {
		const known =
			item.mode === 'custom' && typeof item.cronExpression === 'string'
				? cronSeconds(item.cronExpression)
				: undefined;
		if (!known) return MINUTE_MS;
		for (const second of known) seconds.add(second);
	}
	const sorted = [...seconds].sort((a, b) => a - b);
	const gaps = sorted.map((second, index) => (sorted[index + 1] ?? sorted[0] + 60) - second);
	return Math.min(...gaps) * 1000;
}

/** When a poll stops starting requests, and when every request and wait of it ends. */
export interface PollTimes {
	stopAt: number;
	deadline: number;
}

/** No limit: Fetch Test Event, which n8n runs outside the poll schedule. */
export const UNBOUNDED: PollTimes = {
	stopAt: Number.POSITIVE_INFINITY,
	deadline: Number.POSITIVE_INFINITY,
};

/**
 * A poll's times: within n8n's poll budget (durable scheduler: about 36 s) and before the next poll
 * time can fire (legacy scheduler: a poll time firing during a poll disturbs it, see above). It stops
 * starting requests at 80 % of that and cuts what is still running at 95 %, leaving the rest for the
 * hand-off to n8n.
 */
export function pollTimes(ctx: IPollFunctions): PollTimes {
	const host = ctx as { getPollBudgetMs?: () => unknown };
	const value = typeof host.getPollBudgetMs === 'function' ? host.getPollBudgetMs() : undefined;
	const budget = typeof value === 'number' && value > 0 ? value : Number.POSITIVE_INFINITY;
	const pollTimesParameter = ctx.getNodeParameter('pollTimes', {}) as { item?: PollTimeItem[] };
	const window = Math.min(budget, shortestPollGapMs(pollTimesParameter.item));
	const now = Date.now();
	return { stopAt: now + window * 0.8, deadline: now + window * 0.95 };
}
