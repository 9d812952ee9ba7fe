/**
 * The reference model of Generate's money-path promises (README, docs/retry.md; issue 56's list),
 * judged from ground truth only: the emulator's requests and paid turns per prompt and account, the
 * harness's own record of each execution (what it ran, where it killed or stopped it), and what
 * each item of each execution reported (its output, or its error's `code` and `charge`). Nothing
 * the node wrote to n8n's store is read. Pure: history.ts runs the history and hands in the world.
 *
 * The model names:
 * - an *ask*: a row of an execution (a product, on an account); the retries of an execution (its
 *   *family*: Executions → Retry, after a kill, a failure or a Stop) share its asks, a new execution
 *   asks anew. A row's prompt carries its family (`p0 #3.`), so the emulator's counts per prompt and
 *   account are counts per ask;
 * - a *key*: the Idempotency Key, one per keyed product (`k…`), the same string in every execution
 *   and under both accounts: a key is the account's, so (key, account) is one generation;
 * - a *saved record*: an execution n8n saved (failed, stopped or finished) and what it reported;
 *   Resend Uncertain Generations resends what a saved record reported `may_have_been_charged`,
 *   once per saved record;
 * - a *kill window*: n8n killed while the node ran may leave claims written and not sent: at most
 *   the execution's Concurrency, per kill the harness made (its own record, never the store's).
 *
 * The rules (`broken`), numbered as the promises in test/model/README.md:
 * 1. paid once: per ask, paid turns ≤ the most any attempt of the family asked of it, plus one per
 *    saved record that reported it maybe charged and was retried with Resend; per key and account,
 *    one paid turn, plus such resends, plus one each time the key fell out of the record's budget
 *    (RECORD_LIMITS.keys other keys claimed since: scaled histories);
 * 2. a refusal `idempotency_key_used` only for a key paid on that row's account by then (or claimed
 *    and sent by the same execution: a twin in flight); and a key paid only by node runs n8n killed
 *    before they ended, delivered nowhere and reported to no one, is open: never reported `not_sent`;
 * 3. (with 1) resends only from a saved record that reported the item maybe charged, once each;
 * 4. a result (an `ok` item's turn) only to a row of the account that paid it; every paid turn on
 *    the account of a row of its payer;
 * 5 and 7. every `charge` label true: `not_sent` / `not_charged` items of an ask ≤ the rows of that
 *    ask the attempt did not pay for; `may_have_been_charged`: a request not refused left for it
 *    (its ask in its family by then; a keyed row: its key on its account, any time — open), except
 *    as many as the kill windows allow;
 * 6. Max Credits per Execution: credits paid by an execution and its retries ≤ the cap of each
 *    attempt (what earlier attempts paid counts); Max Credits per Item: no paid turn above it;
 * 7. a generated item of a failed (or stopped) execution is returned by its retry: an ask answered
 *    (2xx) in the saved record's attempt is never reported not ok by a retry of it.
 * Within the scaled budgets: rule 1 per ask holds while what the record must hold fits (`Caps`).
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
 * A row's prompt: its product and its family (`p0 #3.`), so that what the emulator counts per
 * prompt is per ask of one family; the Idempotency Key is the product alone, shared by all.
 */
export const promptOf = (product: string, family: number) => `${product} #${family}.`;

export function parsePrompt(prompt: string): { product: string; family: number } {
	const [product, family] = prompt.split(' #');
	return { product, family: parseInt(family, 10) };
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
	/** For a retry: the attempt whose saved record (or, after a kill, whose start) it starts from. */
	from?: number;
	runs: Row[][];
	credential: Credential;
	resend: boolean;
	asTool: boolean;
	concurrency: number;
	/** On Error (an agent's call: its failure is its output, as under Continue). */
	onError: 'stop' | 'errorOutput' | 'continue';
	/** Max Credits per Execution and per Item as this attempt ran (0: no limit). */
	maxPerExecution: number;
	maxPerItem: number;
	/** Request-log seqs and paid turns seen at its start and end (its window). */
	window: { fromSeq: number; toSeq: number; turnsBefore: Set<string>; turnsAfter: Set<string> };
	/** `stopped`: the user's Stop (n8n saves it `canceled`). */
	outcome: 'finished' | 'failed' | 'killed' | 'stopped';
	reports: Report[];
	/**
	 * The harness's own record of where it killed n8n: while the node ran (`running`: at a store
	 * call, a send or a download), or after the node finished, before n8n saved (`afterNode`).
	 */
	killed?: 'running' | 'afterNode';
	/**
	 * Killed while the node ran: when its last node run that ended before the kill ended (a loop's
	 * earlier batch, an earlier agent call), on the service's clock: what it paid by then was handed
	 * to n8n, whose save the kill then lost (n8n's window, as `afterNode`).
	 */
	endedBefore?: number;
}

export interface Request {
	seq: number;
	/** When the service logged it (ms). */
	at: number;
	prompt: string;
	account: Account | undefined;
	/** The API key it was sent with (the `Authorization` header as the service logged it). */
	apiKey: string;
	/** The service refused it (a 4xx, or a 5xx it answered): nothing was charged. */
	refused: boolean;
	/** Answered 2xx: the node had the generation. */
	answered: boolean;
}

export interface Turn {
	id: string;
	prompt: string;
	account: Account;
	charged: number;
	/** The request it answers (matched by prompt, account and time), its API key, and when it came. */
	seq: number;
	apiKey: string;
	at: number;
}

export interface Caps {
	/** RECORD_LIMITS as the node read them: values of the node's row of paid sends, and keys. */
	sends: number;
	keys: number;
}

export interface World {
	attempts: Attempt[];
	requests: Request[];
	/** Paid turns (charged > 0). */
	turns: Turn[];
	caps: Caps;
}

/**
 * The node's credential: account A's key for every row (`fixed`), account A's second key for every
 * row (`second`: a new key of the same account), or each row's account's key (`perItem`).
 */
export type Credential = 'fixed' | 'second' | 'perItem';

export const accountOf = (attempt: Attempt, row: Row): Account =>
	attempt.credential === 'perItem' ? row.account : 'A';

const MAYBE = 'may_have_been_charged';
const FREE = new Set(['not_sent', 'not_charged']);

interface Ask {
	product: string;
	account: Account;
	run: number;
	item: number;
}

/** Each ask of an attempt, in order; an agent's repeat of a call reported maybe charged is none. */
function asksOf(attempt: Attempt): Ask[] {
	const asks: Ask[] = [];
	const uncertain = new Set<string>();
	attempt.runs.forEach((rows, run) =>
		rows.forEach((row, item) => {
			const account = accountOf(attempt, row);
			const ask = `${row.product} ${account}`;
			if (!(attempt.asTool && uncertain.has(ask)))
				asks.push({ product: row.product, account, run, item });
			const report = attempt.reports.find((r) => r.run === run && r.item === item);
			if (report?.charge === MAYBE) uncertain.add(ask);
		}),
	);
	return asks;
}

const byId = (world: World) => [...world.attempts].sort((a, b) => a.id - b.id);

/**
 * Who paid a turn: the attempt of the turn's family (its prompt names it) that had started before
 * the turn was paid, the latest such (a family's attempts run one after another; a send in flight
 * when n8n was killed lands just after, and is its killed attempt's).
 */
function payerOf(world: World, turn: Turn): Attempt | undefined {
	const { family } = parsePrompt(turn.prompt);
	return byId(world)
		.filter((a) => a.family === family && !a.window.turnsBefore.has(turn.id))
		.at(-1);
}

/** The saved records a retry with Resend Uncertain Generations started from: one resend each. */
function resentRecords(world: World): Set<number> {
	const records = new Set<number>();
	for (const attempt of world.attempts) {
		if (attempt.kind === 'retryExecution' && attempt.resend && attempt.from !== undefined)
			records.add(attempt.from);
	}
	return records;
}

/** What a saved record reported maybe charged, per ask (`product account`). */
function uncertainIn(attempt: Attempt): Map<string, number> {
	const found = new Map<string, number>();
	for (const report of attempt.reports) {
		const row = attempt.runs[report.run]?.[report.item];
		if (!row || report.charge !== MAYBE) continue;
		const ask = `${row.product} ${accountOf(attempt, row)}`;
		found.set(ask, (found.get(ask) ?? 0) + 1);
	}
	return found;
}

/** Rule 1, per ask: how many paid turns each (product, account) of a family may have. */
function askBudgets(world: World, family: number): Map<string, number> {
	const attempts = world.attempts.filter((attempt) => attempt.family === family);
	const budget = new Map<string, number>();
	for (const attempt of attempts) {
		const counts = new Map<string, number>();
		for (const { product, account } of asksOf(attempt)) {
			const ask = `${product} ${account}`;
			counts.set(ask, (counts.get(ask) ?? 0) + 1);
		}
		for (const [ask, n] of counts) budget.set(ask, Math.max(budget.get(ask) ?? 0, n));
	}
	const resent = resentRecords(world);
	for (const record of attempts.filter((attempt) => resent.has(attempt.id))) {
		for (const [ask, n] of uncertainIn(record)) budget.set(ask, (budget.get(ask) ?? 0) + n);
	}
	return budget;
}

/**
 * What the node's row of paid sends must hold for rule 1 per ask to be promised (an
 * over-estimate): per family the sends of its largest attempt, one per new execution, one per
 * resend or retried refusal.
 */
function valuesNeeded(world: World): number {
	const largest = new Map<number, number>();
	let needed = 0;
	for (const attempt of world.attempts) {
		const rows = attempt.runs.flat().length;
		largest.set(attempt.family, Math.max(largest.get(attempt.family) ?? 0, rows));
		needed += attempt.kind === 'new' ? 1 : rows;
	}
	for (const rows of largest.values()) needed += rows;
	return needed;
}

/**
 * Rule 1, per key, account and API key: each paid turn beyond the first must be a resend or a
 * fallen-out key. The record knows a key by the API key that sent it (README, "Retries and stops":
 * "a key used under a replaced API key is new to its replacement"): a new API key of the same
 * account pays a used key once more.
 */
function keyPaidTwice(world: World): string[] {
	const found: string[] = [];
	const resent = resentRecords(world);
	const attempts = new Map(world.attempts.map((a) => [a.id, a]));
	const groups = new Map<string, Turn[]>();
	// As for rule 1 per ask: a turn of a family no attempt of this history has is an earlier
	// history's held request that landed late (the service is shared across histories).
	const families = new Set(world.attempts.map((attempt) => attempt.family));
	for (const turn of world.turns) {
		const { product, family } = parsePrompt(turn.prompt);
		if (!keyed(product) || !families.has(family)) continue;
		const group = `${product} ${turn.account} ${turn.apiKey}`;
		groups.set(group, [...(groups.get(group) ?? []), turn]);
	}
	const used = new Map<string, number>(); // resends used per saved record and key
	for (const [group, turns] of groups) {
		const [key, account] = group.split(' ');
		const ask = `${key} ${account}`;
		turns.sort((a, b) => a.seq - b.seq);
		let last = turns[0];
		for (const turn of turns.slice(1)) {
			// Fallen out of the record: `caps.keys` other keys (of any account) claimed in between.
			const others = new Set(
				world.requests
					.filter((r) => r.seq > last.seq && r.seq < turn.seq)
					.map((r) => `${parsePrompt(r.prompt).product} ${r.account}`)
					.filter((other) => keyed(other) && other !== ask),
			);
			const payer = payerOf(world, turn);
			const record = payer?.from !== undefined ? attempts.get(payer.from) : undefined;
			const resend =
				payer?.kind === 'retryExecution' &&
				payer.resend &&
				record &&
				resent.has(record.id) &&
				(uncertainIn(record).get(ask) ?? 0) > (used.get(`${record.id} ${ask}`) ?? 0);
			if (others.size >= world.caps.keys) {
				last = turn;
			} else if (resend) {
				const of = `${record!.id} ${ask}`;
				used.set(of, (used.get(of) ?? 0) + 1);
				last = turn;
			} else {
				found.push(
					`key paid twice: key ${key} on ${account} paid again by ${payer ? `#${payer.id} (${payer.kind}${payer.from !== undefined ? ` of #${payer.from}` : ''})` : 'no attempt'} (${turn.prompt}); no resend of a saved record that reported it maybe charged, ${others.size} other keys since`,
				);
				break;
			}
		}
	}
	return found;
}

const where = (attempt: Attempt, row: Row) =>
	`${row.product} on ${accountOf(attempt, row)} in execution #${attempt.id} (${attempt.kind} of #${attempt.family})`;

/** The rules broken by this world, in words; none when it keeps every promise. */
export function broken(world: World): string[] {
	const found: string[] = [];
	const turnsById = new Map(world.turns.map((t) => [t.id, t]));
	const attempts = byId(world);

	// 1 and 3. Nothing paid twice: per ask, per key and account; resends only as allowed.
	if (valuesNeeded(world) <= world.caps.sends) {
		const paid = new Map<string, number>();
		for (const turn of world.turns) {
			const ask = `${turn.prompt} ${turn.account}`;
			paid.set(ask, (paid.get(ask) ?? 0) + 1);
		}
		// A turn of a family no attempt of this history has is an earlier history's request that
		// landed late (the accounts and the service are shared across histories): not this world's.
		const families = new Set(world.attempts.map((attempt) => attempt.family));
		for (const [ask, n] of paid) {
			const [product, family, account] = ask.split(' ');
			if (!families.has(Number(family.slice(1)))) continue;
			const budget = askBudgets(world, Number(family.slice(1))).get(`${product} ${account}`) ?? 0;
			if (n > budget)
				found.push(
					`paid twice: ${product} on ${account} in execution ${family} and its retries paid ${n}×, its asks and resends allow ${budget}`,
				);
		}
	}
	found.push(...keyPaidTwice(world));

	const delivered = new Set(
		world.attempts.flatMap((a) => a.reports.flatMap((r) => (r.ok && r.turnId ? [r.turnId] : []))),
	);
	const neverLeft: Array<{ family: number; thing: string; where: string; code?: string }> = [];
	const cutByStop = new Map<number, number>();
	for (const attempt of attempts) {
		for (const report of attempt.reports) {
			const row = attempt.runs[report.run]?.[report.item];
			if (!row) continue;
			const account = accountOf(attempt, row);
			const prompt = promptOf(row.product, attempt.family);
			const at = where(attempt, row);

			// 4. A result only to a row of the account that paid it.
			if (report.ok && report.turnId) {
				const turn = turnsById.get(report.turnId);
				if (turn && (turn.account !== account || parsePrompt(turn.prompt).product !== row.product))
					found.push(
						`result to another account's row: ${at} was given turn ${turn.id}, paid by ${turn.account} for ${turn.prompt}`,
					);
			}

			// 7 (may_have_been_charged). A request not refused left for it.
			if (report.charge === MAYBE) {
				const left = world.requests.some(
					(request) =>
						!request.refused &&
						(keyed(row.product)
							? // Its key on its account, by any execution, at any time: a key claimed by a run
								// not ended (another process between its claim and its send) is open.
								parsePrompt(request.prompt).product === row.product &&
								(request.account === account ||
									request.account === undefined ||
									report.code === 'other_key')
							: request.seq <= attempt.window.toSeq &&
								request.prompt === prompt &&
								(request.account === account ||
									request.account === undefined ||
									report.code === 'other_key')),
				);
				// The user's Stop (the harness's record) caught a send of a lane as it left, before the
				// service logged it: README, "Limits and Stop" (a generation stopped as it was sent may
				// have been charged); at most a wave of lanes per Stop.
				const stopCut =
					!left &&
					report.code === 'cancelled' &&
					attempt.outcome === 'stopped' &&
					(cutByStop.get(attempt.id) ?? 0) < attempt.concurrency;
				if (stopCut) cutByStop.set(attempt.id, (cutByStop.get(attempt.id) ?? 0) + 1);
				if (!left && !stopCut)
					neverLeft.push({
						family: attempt.family,
						thing: keyed(row.product)
							? `key ${row.product} ${account}`
							: `${attempt.family} ${row.product} ${account}`,
						where: at,
						code: report.code,
					});
			}

			// 2. A key refused only when paid on the row's account, or open: never as free when open.
			if (report.code === 'idempotency_key_used') {
				const paid = world.turns.filter(
					(turn) =>
						parsePrompt(turn.prompt).product === row.product &&
						turn.account === account &&
						attempt.window.turnsAfter.has(turn.id),
				);
				const ownTwin = world.requests.some(
					(request) =>
						request.seq > attempt.window.fromSeq &&
						request.seq <= attempt.window.toSeq &&
						request.prompt === prompt &&
						request.account === account,
				);
				if (!paid.length && !ownTwin) {
					found.push(
						`refused for a key never paid: ${at} reported idempotency_key_used, no paid turn of ${row.product} on ${account}`,
					);
				} else if (report.charge !== MAYBE && paid.length) {
					// Open: every paid turn of the key was by a run n8n killed while it ran, delivered
					// nowhere, reported maybe charged to no one before this attempt.
					const told = (turn: Turn) =>
						delivered.has(turn.id) ||
						attempts.some(
							(other) =>
								other.id !== attempt.id &&
								other.window.toSeq <= attempt.window.toSeq &&
								other.reports.some((r) => {
									const theirs = other.runs[r.run]?.[r.item];
									return (
										r.charge === MAYBE &&
										theirs?.product === row.product &&
										accountOf(other, theirs) === account
									);
								}),
						);
					const open = paid.every((turn) => {
						const payer = payerOf(world, turn);
						const runEnded = turn.at <= (payer?.endedBefore ?? -1);
						return payer?.killed === 'running' && !runEnded && !told(turn);
					});
					if (open)
						found.push(
							`paid reported free: ${at} reported idempotency_key_used/${report.charge}; its key's turn ${paid[0].id} was paid by a node run n8n killed before it ended, delivered nowhere and reported to no one (the key is open: may_have_been_charged)`,
						);
				}
			}
		}
	}

	// 7 (may_have_been_charged), the kill windows: per kill, at most its Concurrency claims unsent.
	const windowOf = (family?: number) =>
		world.attempts
			.filter((a) => a.killed === 'running' && (family === undefined || a.family === family))
			.reduce((sum, a) => sum + a.concurrency, 0);
	const things = new Set(neverLeft.map((n) => n.thing));
	const families = new Set(
		neverLeft.filter((n) => !n.thing.startsWith('key ')).map((n) => n.family),
	);
	const overflows: string[] = [];
	if (things.size > windowOf()) overflows.push(`${things.size} > ${windowOf()} in all`);
	for (const family of families) {
		const mine = new Set(
			neverLeft
				.filter((n) => n.family === family && !n.thing.startsWith('key '))
				.map((n) => n.thing),
		);
		if (mine.size > windowOf(family))
			overflows.push(`${mine.size} > ${windowOf(family)} in execution ${family}`);
	}
	if (overflows.length) {
		const { where: at, code } = neverLeft[0];
		found.push(
			`refused, never sent: ${at} reported ${code} (${MAYBE}) with no request for it that the service did not refuse (${overflows.join(', ')} the kills' windows allow)`,
		);
	}

	for (const attempt of attempts) {
		// 5 and 7 (not_sent / not_charged). No more such items of an ask than rows it did not pay for.
		const rows = new Map<string, number>();
		const free = new Map<string, number>();
		for (const row of attempt.runs.flat()) {
			const ask = `${row.product} ${accountOf(attempt, row)}`;
			rows.set(ask, (rows.get(ask) ?? 0) + 1);
		}
		for (const report of attempt.reports) {
			const row = attempt.runs[report.run]?.[report.item];
			if (!row || !FREE.has(report.charge ?? '')) continue;
			const ask = `${row.product} ${accountOf(attempt, row)}`;
			free.set(ask, (free.get(ask) ?? 0) + 1);
		}
		for (const [ask, n] of free) {
			const [product, account] = ask.split(' ');
			const paid = world.turns.filter(
				(turn) =>
					turn.prompt === promptOf(product, attempt.family) &&
					turn.account === account &&
					payerOf(world, turn) === attempt,
			).length;
			if (paid > (rows.get(ask) ?? 0) - n) {
				const report = attempt.reports.find((r) => {
					const row = attempt.runs[r.run]?.[r.item];
					return (
						row && `${row.product} ${accountOf(attempt, row)}` === ask && FREE.has(r.charge ?? '')
					);
				})!;
				found.push(
					`paid reported free: ${product} on ${account} in execution #${attempt.id} (${attempt.kind} of #${attempt.family}) reported ${report.code}/${report.charge}, and it paid ${paid} turn(s) for ${rows.get(ask)} such row(s)`,
				);
			}
		}

		// 5. Under Continue (either output), a run that ends gives every item an output: an ask it
		// paid for is reported, `ok` or `may_have_been_charged`, as often as it was paid (a Stop
		// included: "keeps its result, or is reported with its charge").
		if (attempt.onError !== 'stop' && attempt.outcome !== 'killed') {
			const told = new Map<string, number>();
			for (const report of attempt.reports) {
				const row = attempt.runs[report.run]?.[report.item];
				if (!row || !(report.ok || report.charge === MAYBE)) continue;
				const ask = `${row.product} ${accountOf(attempt, row)}`;
				told.set(ask, (told.get(ask) ?? 0) + 1);
			}
			const paidAsks = new Map<string, number>();
			for (const turn of world.turns) {
				if (payerOf(world, turn) !== attempt) continue;
				const ask = `${parsePrompt(turn.prompt).product} ${turn.account}`;
				paidAsks.set(ask, (paidAsks.get(ask) ?? 0) + 1);
			}
			for (const [ask, n] of paidAsks) {
				if (n > (told.get(ask) ?? 0)) {
					found.push(
						`paid, not reported: ${ask.replace(' ', ' on ')} in execution #${attempt.id} (${attempt.kind} of #${attempt.family}, ${attempt.outcome}) paid ${n} turn(s), reported ok or maybe charged ${told.get(ask) ?? 0}×`,
					);
				}
			}
		}

		// 6. Max Credits per Execution across kills and retries; per Item. What an earlier attempt
		// paid under another credential setting is not counted (README: "a retry whose credential
		// was switched after the stop finds nothing the stopped attempt sent, and counts anew").
		const family = attempts.filter((a) => a.family === attempt.family && a.id <= attempt.id);
		const paidBy = (a: Attempt) =>
			world.turns.filter((t) => payerOf(world, t) === a).reduce((sum, t) => sum + t.charged, 0);
		if (attempt.maxPerExecution > 0) {
			const before = family
				.slice(0, -1)
				.filter((a) => a.credential === attempt.credential)
				.reduce((sum, a) => sum + paidBy(a), 0);
			const during = paidBy(attempt);
			if (during > 0 && before + during > attempt.maxPerExecution)
				found.push(
					`cap passed: execution ${attempt.family} and its retries paid ${before + during} credits by the end of #${attempt.id} (${before} before it), Max Credits per Execution ${attempt.maxPerExecution}`,
				);
		}
		if (attempt.maxPerItem > 0) {
			const over = world.turns.find(
				(t) => payerOf(world, t) === attempt && t.charged > attempt.maxPerItem,
			);
			if (over)
				found.push(
					`cap passed: ${over.prompt} charged ${over.charged}, Max Credits per Item ${attempt.maxPerItem}`,
				);
		}

		// 7 (returned). A generated item of a failed or stopped execution is returned by its retry.
		const record =
			attempt.kind === 'retryExecution' && attempt.from !== undefined
				? world.attempts.find((a) => a.id === attempt.from)
				: undefined;
		if (record) {
			const once = (a: Attempt, product: string, account: Account) =>
				a.runs.flat().filter((row) => row.product === product && accountOf(a, row) === account)
					.length === 1;
			for (const report of attempt.reports) {
				const row = attempt.runs[report.run]?.[report.item];
				if (!row || report.ok) continue;
				const account = accountOf(attempt, row);
				if (!once(attempt, row.product, account) || !once(record, row.product, account)) continue;
				// The user's Stop (the harness's record) cut its answer: README, "A generation stopped
				// while the service worked may still have been charged: the error says so".
				const cut = record.reports.some(
					(r) =>
						record.outcome === 'stopped' &&
						r.code === 'cancelled' &&
						r.charge === 'may_have_been_charged' &&
						record.runs[r.run]?.[r.item]?.product === row.product &&
						accountOf(record, record.runs[r.run][r.item]) === account,
				);
				if (cut) continue;
				const answered = world.requests.some(
					(r) =>
						r.answered &&
						r.prompt === promptOf(row.product, attempt.family) &&
						r.account === account &&
						r.seq > record.window.fromSeq &&
						r.seq <= record.window.toSeq,
				);
				if (answered)
					found.push(
						`generated not returned: ${where(attempt, row)} reported ${report.code}/${report.charge}; #${record.id}, the execution it retries, had its generation`,
					);
			}
		}
	}

	// 4. Every charge on the account of a row of its payer.
	for (const turn of world.turns) {
		const payer = payerOf(world, turn);
		const { product } = parsePrompt(turn.prompt);
		if (
			payer &&
			!payer.runs.some((rows) =>
				rows.some((row) => row.product === product && accountOf(payer, row) === turn.account),
			)
		) {
			found.push(
				`wrong account: ${turn.prompt} charged to ${turn.account}, no row of #${payer.id} asked it there`,
			);
		}
	}
	return [...new Set(found)];
}
