/**
 * The reference model of Generate's money-path promises (docs/retry.md, the README's retry table),
 * checked against what a history left outside the node: the emulator's requests and paid turns, per
 * prompt and account, and what each item of each execution reported (its output, or its error's
 * `code` and `charge`). Pure: test/model/history.ts runs the history and hands in the journal.
 *
 * The model names five things:
 * - an *ask*: a row of an execution (a product, on an account); the retries of an execution (its
 *   *family*: Executions → Retry, after a kill or a failure) share its asks, a new execution asks anew;
 * - a *key*: the Idempotency Key, here one per keyed product (`k…`), shared by every execution;
 * - an *account*: whose key a row's request goes with (the credential's fixed key is account A's,
 *   `{{ $json.apiKey }}` the row's own);
 * - an *agent call*: a run of one item under AI Agent 3.x; a repeat of a call reported as maybe
 *   charged is no new ask;
 * - a *saved record*: an execution whose saved data a retry starts from (Resend Uncertain
 *   Generations sends an uncertain ask again once per saved record).
 *
 * And the rules, each a budget or a condition on what is reported. A row's prompt carries its
 * family (`promptOf`), so the emulator's counts per prompt and account are counts per ask:
 * 1. paid ≤ budget, per ask: the most any attempt of the family asked of it, plus one per saved
 *    record retried with Resend Uncertain Generations; per key: once per epoch (an execution with
 *    Clear Idempotency Key opens one: not its tries or batches), plus resends;
 * 2. an item reported `may_have_been_charged` (e.g. `interrupted_send`) had a request for its ask
 *    on its account before (for `other_key` under any account; a keyed row: for its key, by any
 *    execution),
 *    except, per family, as many asks as a kill stopped between their claim's write and their send,
 *    or between a retry's asking of the sends' row and its taking out;
 * 3. `idempotency_key_used` with charge `not_sent` never stands for a key whose paid generation
 *    nobody was told of (not delivered, not in a failed execution, not reported maybe charged, not
 *    retried since with Resend Uncertain Generations: the user's word that they looked), unless
 *    n8n was killed after the node had the key's answer and before it saved the execution (n8n
 *    says nothing of its save);
 * 4. every paid turn is on the account of a row of its family's execution running then;
 * 5. (what it costs) only a retry asks the node's row of paid sends (docs/retry.md: "Only a retry
 *    reads it"): a new execution never does.
 * Within the caps: rule 1 holds while what the records must hold fits their caps (`Caps`).
 */

export type Account = 'A' | 'B';

export interface Row {
	/** `p…` plain, `k…` keyed (its Idempotency Key is the product). */
	product: string;
	/** Whose key the row carries in `apiKey`. */
	account: Account;
}

export const keyed = (product: string) => product.startsWith('k');

/**
 * A row's prompt: its product and its family (`p0 #3`), so that what the emulator counts per
 * prompt is per ask of one family; the Idempotency Key is the product alone, shared by all.
 */
export const promptOf = (product: string, family: number) => `${product} #${family}`;

function parsePrompt(prompt: string): { product: string; family: number } {
	const [product, family] = prompt.split(' #');
	return { product, family: Number(family) };
}

export interface Report {
	/** The run (a batch of a loop, an agent call) and the item in it. */
	run: number;
	item: number;
	ok: boolean;
	turnId?: string;
	code?: string;
	charge?: string;
}

export interface Attempt {
	id: number;
	/** The execution this one retries, and so on back to a new one: its id. */
	family: number;
	kind: 'new' | 'retryAfterKill' | 'retryExecution';
	/** For a retry: the attempt whose saved record it starts from. */
	from?: number;
	runs: Row[][];
	credential: 'fixed' | 'perItem';
	clear: boolean;
	resend: boolean;
	asTool: boolean;
	/** Request-log seqs and paid turns seen at its start and end (its window). */
	window: { fromSeq: number; toSeq: number; turnsBefore: Set<string>; turnsAfter: Set<string> };
	outcome: 'finished' | 'failed' | 'killed';
	reports: Report[];
	/** How often it asked the node's row of sends which of its sends it holds (store calls seen). */
	sendsAsked: number;
	/**
	 * Killed once a claim call was written: the sends it claimed, whose send the kill stopped
	 * (docs/retry.md: "A value written before a send that the kill then stopped is reported the
	 * same way", one wave of lanes).
	 */
	claimedAtKill: number;
	/**
	 * Killed after the node had finished, before n8n saved the execution: n8n tells a node nothing
	 * of its save, so the node took its answers as delivered (docs/retry.md, "What n8n gives no
	 * guarantee for").
	 */
	unsaved?: boolean;
	/** The Idempotency Keys whose send's answer the node had taken before n8n stopped. */
	keysAnswered?: string[];
}

export interface Request {
	seq: number;
	prompt: string;
	account: Account | undefined;
}

export interface Turn {
	id: string;
	prompt: string;
	account: Account;
	charged: number;
}

export interface Caps {
	/** Values the node's row of paid sends holds, and keys the claims' row holds (RECORD_LIMITS). */
	sends: number;
	keys: number;
}

export interface World {
	attempts: Attempt[];
	requests: Request[];
	/** Paid turns (charged > 0), in no particular order (their ids are random). */
	turns: Turn[];
	caps: Caps;
}

export const accountOf = (attempt: Attempt, row: Row): Account =>
	attempt.credential === 'fixed' ? 'A' : row.account;

const MAYBE = 'may_have_been_charged';

/** Each ask of an attempt, in order; an agent's repeat of a call reported maybe charged is none. */
function asksOf(attempt: Attempt): Array<{ product: string; account: Account }> {
	const asks: Array<{ product: string; account: Account }> = [];
	const uncertain = new Set<string>();
	attempt.runs.forEach((rows, run) =>
		rows.forEach((row, item) => {
			const account = accountOf(attempt, row);
			const ask = `${row.product} ${account}`;
			if (!(attempt.asTool && uncertain.has(ask))) asks.push({ product: row.product, account });
			const report = attempt.reports.find((r) => r.run === run && r.item === item);
			if (report?.charge === MAYBE) uncertain.add(ask);
		}),
	);
	return asks;
}

const count = <T>(list: T[], keep: (value: T) => boolean) => list.filter(keep).length;

/** Rule 1, per ask: how many paid turns each (product, account) of a family may have. */
function askBudgets(world: World, family: number): Map<string, number> {
	const attempts = world.attempts.filter((attempt) => attempt.family === family);
	const budget = new Map<string, number>();
	// A family's asks: the most any of its attempts made of each (rows may change on a retry).
	for (const attempt of attempts) {
		const counts = new Map<string, number>();
		for (const { product, account } of asksOf(attempt)) {
			const ask = `${product} ${account}`;
			counts.set(ask, (counts.get(ask) ?? 0) + 1);
		}
		for (const [ask, n] of counts) budget.set(ask, Math.max(budget.get(ask) ?? 0, n));
	}
	// Resend Uncertain Generations: once more per saved record it was retried from.
	const resentFrom = new Map<number, Attempt>();
	for (const attempt of attempts) {
		if (attempt.resend && attempt.from !== undefined) resentFrom.set(attempt.from, attempt);
	}
	for (const attempt of resentFrom.values()) {
		for (const { product, account } of asksOf(attempt)) {
			budget.set(`${product} ${account}`, (budget.get(`${product} ${account}`) ?? 0) + 1);
		}
	}
	return budget;
}

/**
 * Rule 1, per key: an execution with Clear Idempotency Key opens a new *epoch* of the key (its
 * clearing is once, before its first send, whatever its tries and batches); each epoch pays the key
 * once, and once more per resend started in it. The paid turns of each epoch, and what it allows.
 */
function keyEpochs(world: World, key: string): Array<{ paid: Turn[]; allowed: number }> {
	const has = (attempt: Attempt) =>
		attempt.runs.some((rows) => rows.some((row) => row.product === key));
	const clearing = world.attempts.filter((attempt) => attempt.clear && has(attempt));
	// A turn is in the epoch of the clearing executions that had started before it was paid.
	const epochOf = (turn: Turn) => count(clearing, (a) => !a.window.turnsBefore.has(turn.id));
	const epochs = Array.from({ length: clearing.length + 1 }, () => ({
		paid: [] as Turn[],
		allowed: 1,
	}));
	// A clearing execution clears at its first claim of the key, not at its start (docs/retry.md:
	// "the run's first item with that key is sent"): a turn another execution paid while a clearing
	// one ran (a pause, a hold), or claimed before a clearing another process ran, may be before or
	// after that claim, so it goes to the earliest epoch with room among those it may be in; the
	// clearing execution's own turns are in its epoch.
	const ran = (attempt: Attempt, turn: Turn) =>
		!attempt.window.turnsBefore.has(turn.id) && attempt.window.turnsAfter.has(turn.id);
	const flexible: Array<{ turn: Turn; from: number; to: number }> = [];
	for (const turn of world.turns) {
		if (parsePrompt(turn.prompt).product !== key) continue;
		const to = epochOf(turn);
		// Its payer: the innermost execution of the turn's family (its prompt names it) running then
		// (one run inside another has a later id). Not whatever ran then: a send in flight when
		// another process's execution ran (a pause) is paid in that one's window, never by it.
		const payer = payers(world, turn).sort((a, b) => b.id - a.id)[0];
		// Its claim was made while its payer ran: after the clearings that had ended before the payer
		// began, maybe before the others (another process clearing while this one waited to send).
		const from = payer
			? count(clearing, (a) => a !== payer && a.window.toSeq <= payer.window.fromSeq)
			: to;
		// A clearing execution's own turns are in its own epoch, after the clearings begun before it
		// (two clearing at once each send the key once: "the run's first item with that key is sent").
		if (clearing.includes(payer))
			epochs[1 + count(clearing, (a) => a.id < payer.id)].paid.push(turn);
		else if (from >= to) epochs[to].paid.push(turn);
		else flexible.push({ turn, from, to });
	}
	for (const { turn, from, to } of flexible) {
		const room = epochs.slice(from, to + 1).findIndex((epoch) => epoch.paid.length < epoch.allowed);
		epochs[room < 0 ? to : from + room].paid.push(turn);
	}
	// A resend pays once more in the epoch its turn lands in, which another execution's clearing may
	// have opened while it ran (docs/retry.md: "A resend's key is the uncertain send's own"): each
	// retry with Resend Uncertain Generations allows one more turn of the key, paid while it ran.
	const resends = world.attempts.filter(
		(attempt) => attempt.resend && attempt.kind !== 'new' && has(attempt),
	);
	for (const epoch of epochs) {
		for (const turn of epoch.paid) {
			if (epoch.allowed >= epoch.paid.length) break;
			const resend = resends.findIndex((attempt) => ran(attempt, turn));
			if (resend < 0) continue;
			resends.splice(resend, 1);
			epoch.allowed++;
		}
	}
	return epochs;
}

/**
 * What the node's row of paid sends must hold for rule 1 to be promised (an over-estimate): per
 * family the sends of its largest attempt, a `began` per new execution, a send again per resend.
 */
function valuesNeeded(world: World): number {
	const largest = new Map<number, number>();
	let needed = 0;
	for (const attempt of world.attempts) {
		const rows = attempt.runs.flat().length;
		largest.set(attempt.family, Math.max(largest.get(attempt.family) ?? 0, rows));
		needed += (attempt.kind === 'new' ? 1 : 0) + (attempt.resend ? rows : 0);
	}
	for (const rows of largest.values()) needed += rows;
	return needed;
}

/** The attempts of the turn's family that were running when it was paid. */
function payers(world: World, turn: Turn): Attempt[] {
	const { family } = parsePrompt(turn.prompt);
	return world.attempts.filter(
		(a) =>
			a.family === family && !a.window.turnsBefore.has(turn.id) && a.window.turnsAfter.has(turn.id),
	);
}

/**
 * A paid turn nobody was told of: not delivered, paid only by executions n8n killed (a failed one
 * names what it paid for in its error, and its retry returns it), and not reported as maybe charged
 * by their retries.
 */
function unaccounted(world: World, turn: Turn, delivered: Set<string>): boolean {
	if (delivered.has(turn.id)) return false;
	const running = payers(world, turn);
	if (!running.length || running.some((attempt) => attempt.outcome !== 'killed')) return false;
	// Killed once the node had its answer and finished, before n8n saved: the key was answered, so
	// it is used (docs/retry.md: "a key whose send was answered `idempotency_key_used`"), and n8n
	// gives a node no word of whether its output was saved ("What n8n gives no guarantee for").
	// The same once the node had the key's answer, a later item or try still running when n8n stopped.
	const { product: key } = parsePrompt(turn.prompt);
	if (running.every((attempt) => attempt.unsaved || attempt.keysAnswered?.includes(key))) {
		return false;
	}
	const { product, family } = parsePrompt(turn.prompt);
	return !world.attempts.some(
		(attempt) =>
			attempt.family === family &&
			(attempt.reports.some(
				(report) =>
					report.charge === MAYBE && attempt.runs[report.run]?.[report.item]?.product === product,
			) ||
				// A retry with Resend Uncertain Generations, started after the turn was paid, is the
				// user's word that they looked: docs/retry.md, "look at the session the error names (or
				// the newest API generation session) on the website. If the generation is not there,
				// turn the option on … If it is there, it was charged" (the README: "check its session,
				// then Resend Uncertain Generations sends it").
				(attempt.resend &&
					attempt.kind !== 'new' &&
					attempt.window.turnsBefore.has(turn.id) &&
					attempt.runs.some((rows) => rows.some((row) => row.product === product)))),
	);
}

/** The rules broken by this world, in words; none when it keeps every promise. */
export function broken(world: World): string[] {
	const found: string[] = [];
	// 1. Nothing paid twice for one ask (an agent call is one), one key.
	if (valuesNeeded(world) <= world.caps.sends) {
		const paid = new Map<string, number>();
		for (const turn of world.turns) {
			const ask = `${turn.prompt} ${turn.account}`;
			paid.set(ask, (paid.get(ask) ?? 0) + 1);
		}
		for (const [ask, n] of paid) {
			const [product, family, account] = ask.split(' ');
			const budget = askBudgets(world, Number(family.slice(1))).get(`${product} ${account}`) ?? 0;
			if (n > budget)
				found.push(
					`paid twice: ${product} on ${account} in execution ${family} and its retries paid ${n}×, its asks allow ${budget}`,
				);
		}
	}
	const keysUsed = new Set(
		world.attempts.flatMap((a) => a.runs.flat().map((row) => row.product)).filter(keyed),
	);
	if (keysUsed.size <= world.caps.keys) {
		for (const key of keysUsed) {
			keyEpochs(world, key).forEach(({ paid, allowed }, epoch) => {
				if (paid.length > allowed) {
					found.push(
						`key paid twice: key ${key} paid ${paid.length}× ${epoch ? `after clearing run ${epoch}` : 'before any clearing'}, allowed ${allowed}`,
					);
				}
			});
		}
	}
	const delivered = new Set(
		world.attempts.flatMap((a) => a.reports.flatMap((r) => (r.ok && r.turnId ? [r.turnId] : []))),
	);
	const neverLeft: Array<{ family: number; ask: string; where: string; code?: string }> = [];
	for (const attempt of world.attempts) {
		for (const report of attempt.reports) {
			const row = attempt.runs[report.run]?.[report.item];
			if (!row) continue;
			const account = accountOf(attempt, row);
			const prompt = promptOf(row.product, attempt.family);
			const where = `${row.product} on ${account} in execution #${attempt.id} (${attempt.kind} of #${attempt.family})`;
			// 2. Nothing refused that never left: a request for the ask, in its family, before.
			if (report.charge === MAYBE) {
				const left = world.requests.some((request) =>
					// A keyed row: its key's send by any execution (docs/retry.md: "a later run that finds
					// it open reports `interrupted_send`"), also one sent just after: another n8n process
					// (a queue-mode worker) had claimed the key and not sent it yet.
					keyed(row.product)
						? parsePrompt(request.prompt).product === row.product
						: request.seq <= attempt.window.toSeq &&
							request.prompt === prompt &&
							// A request the service refused before reading its key (a fault) names no account.
							(request.account === account ||
								request.account === undefined ||
								report.code === 'other_key'),
				);
				if (!left)
					neverLeft.push({
						family: attempt.family,
						ask: `${row.product} ${account}`,
						where,
						code: report.code,
					});
			}

			// 3. A key's paid generation is never reported as costing nothing.
			if (report.code === 'idempotency_key_used' && report.charge === 'not_sent') {
				const lost = world.turns.filter(
					(turn) =>
						parsePrompt(turn.prompt).product === row.product &&
						attempt.window.turnsBefore.has(turn.id) &&
						unaccounted(world, turn, delivered),
				);
				if (lost.length) {
					found.push(
						`paid reported free: ${where} reported idempotency_key_used/not_sent; its key's paid turn ${lost[0].id} was never delivered nor reported`,
					);
				}
			}
		}
	}
	// 2, the window the docs allow: per family, as many asks as a kill stopped between claim and send.
	const families = new Set(neverLeft.map((refusal) => refusal.family));
	for (const family of families) {
		const refused = neverLeft.filter((refusal) => refusal.family === family);
		const asks = new Set(refused.map((refusal) => refusal.ask));
		const window = world.attempts
			.filter((attempt) => attempt.family === family)
			.reduce((sum, attempt) => sum + attempt.claimedAtKill, 0);
		if (asks.size > window) {
			const { where, code } = refused[0];
			found.push(
				`refused, never sent: ${where} reported ${code} (${MAYBE}) with no request for it (${asks.size} such asks, ${window} claimed at a kill)`,
			);
		}
	}
	// 4. Every charge on its row's own account.
	for (const turn of world.turns) {
		const running = payers(world, turn);
		const { product } = parsePrompt(turn.prompt);
		const asked = running.some((attempt) =>
			attempt.runs.some((rows) =>
				rows.some((row) => row.product === product && accountOf(attempt, row) === turn.account),
			),
		);
		if (running.length && !asked) {
			found.push(
				`wrong account: ${turn.prompt} charged to ${turn.account}, no row of #${running.map((a) => a.id).join(', #')} asked it there`,
			);
		}
	}
	// 5. Only a retry reads the sends' row.
	for (const attempt of world.attempts) {
		if (attempt.kind === 'new' && attempt.sendsAsked > 0) {
			found.push(
				`a new execution asked the sends' row: #${attempt.id} asked it ${attempt.sendsAsked}×`,
			);
		}
	}
	return [...new Set(found)];
}
