/**
 * How the trigger lives with n8n's poll schedulers (checked in n8n 2.41.1; docs/polling.md has the
 * whole story):
 *
 * - Legacy scheduler (the default): one long-lived Workflow per active workflow; every poll time
 *   fires a poll whether or not the previous one is still running. Each timed poll acquires the
 *   workflow's expression engine and releases it when it ends, and the release is not counted: a
 *   poll that ends while an earlier one is still running takes the engine away from it, and the
 *   earlier poll's next expression evaluation fails ("No bridge acquired for this context"). The
 *   trigger reads its parameters at the start and its credential needs no expression, so its
 *   requests do not depend on the engine.
 * - Durable scheduler (N8N_POLLER_DURABLE_CURSORS_ENABLED and friends): every poll gets its own
 *   Workflow and its own copy of the stored cursor, committed together with the execution it starts
 *   and fenced by the poll task's lease, not by the cursor's value. A poll interrupted by a restart is
 *   retried with the cursor it started from, possibly beside the next scheduled poll.
 *
 * So two polls of one trigger can run at once in one process under both schedulers, each with its own
 * or with a shared state object. The guard here serialises them by what identifies the trigger
 * (workflow, node, query), not by the state object: a poll that finds another one running waits for it
 * to end and then skips its turn (it must not end first, see above). And a poll whose state copy is
 * older than what this process last delivered skips too, until n8n has committed that delivery.
 * Nothing here can see a poll running in another process (several mains).
 */
import { sleep } from 'n8n-workflow';

/** How long a delivery may take to show up in the state n8n hands the next poll. */
export const COMMIT_GRACE_MS = 2 * 60_000;
/** A poll still running this long after its deadline is taken to be lost; its result is discarded. */
export const STALE_AFTER_MS = 10 * 60_000;
/** How often a waiting poll looks whether the running one has ended. */
const WAIT_STEP_MS = 200;
/** Registry size above which expired entries are swept. */
const SWEEP_ABOVE = 256;

interface Running {
	token: symbol;
	/** Set when the poll ends (returned or threw). */
	ended: boolean;
	staleAt: number;
}

const running = new Map<string, Running>();
/** The state revision each trigger last delivered from this process, until n8n shows it committed. */
const delivered = new Map<string, { rev: number; until: number }>();

function sweep(now: number): void {
	if (delivered.size > SWEEP_ABOVE) {
		for (const [key, entry] of delivered) if (entry.until <= now) delivered.delete(key);
	}
	if (running.size > SWEEP_ABOVE) {
		for (const [key, entry] of running) if (entry.staleAt <= now) running.delete(key);
	}
}

export interface PollTurn {
	/** False once another poll took over this trigger (this one ran past STALE_AFTER_MS). */
	holds(): boolean;
	/** Records that this poll delivered the state with this revision (called before returning items). */
	delivered(rev: number): void;
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
		token: Symbol(key),
		ended: false,
		staleAt: (Number.isFinite(deadline) ? deadline : now + STALE_AFTER_MS) + STALE_AFTER_MS,
	};
	running.set(key, mine);
	return {
		holds: () => running.get(key) === mine,
		delivered(rev) {
			delivered.set(key, { rev, until: Date.now() + COMMIT_GRACE_MS });
		},
		release() {
			mine.ended = true;
			if (running.get(key) === mine) running.delete(key);
		},
	};
}

/** Forgets every turn and delivery (tests: a fresh process). */
export function resetPollTurns(): void {
	running.clear();
	delivered.clear();
}

/** One entry of n8n's Poll Times parameter. */
export interface PollTimeItem {
	mode?: string;
	cronExpression?: string;
	[field: string]: unknown;
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
export function shortestPollGapMs(items: PollTimeItem[] | undefined): number {
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
	let gap = 60;
	for (let index = 0; index < sorted.length; index++) {
		const next = index + 1 < sorted.length ? sorted[index + 1] : sorted[0] + 60;
		if (next !== sorted[index]) gap = Math.min(gap, next - sorted[index]);
	}
	return gap * 1000;
}
