/**
 * Send, replay, prove the account, or not sent: the one decision of the money path, for one item,
 * from what is known of it. Pure. execute.ts's item sequence asks it, hands it the facts it asks for
 * (the account check of a generation made under another key, then what the durable record held
 * before this item's claim), and asks again; docs/retry.md has the same rules as tables.
 *
 * What an item came to earlier, in one vocabulary (`Outcome`, stores.ts):
 * - generated: returned again, never sent again (made under another key: once the account is
 *   confirmed);
 * - uncertain (sent, no clear answer: it may have been charged): never sent again by the same
 *   execution; a retried one sends it only with Resend Uncertain Generations, once;
 * - refused (nothing charged) or never sent: a retried execution sends it again; a try of the same
 *   execution (Retry On Fail) only when its code says a second try can pass.
 * With no earlier outcome, the durable record decides: a send of this run recorded before means an
 * attempt n8n did not finish sent it (`interrupted_send`); a used Idempotency Key is never sent again.
 */
import type { INode } from 'n8n-workflow';

import { rule } from '../../../shared/codes';
import {
	type ChargeOutcome,
	errorDescription,
	imagePackError,
	mayHaveBeenCharged,
} from '../../../shared/errors';
import { TOOL_WINDOW_MS } from './identity';
import type { Memo, StoredAnswer } from './stores';

/** Which of the item's values (identity.ts) the durable record held before this item's claim. */
export interface Recorded {
	/** The run's send (or, for a tool call without a run, its window). */
	sent: boolean;
	/** The same send under the trigger's items (before n8n 2.14; only a cut-off retry reads it). */
	witness?: boolean;
	/** A send again after the execution this one retries (by another retry of it). */
	again: boolean;
	/** The Idempotency Key; its open mark (its send got no answer yet); Clear's mark for this run. */
	key: boolean;
	keyOpen?: boolean;
	keyCleared?: boolean;
	/** With Resend Uncertain Generations: the key claimed before by this execution (a twin row). */
	keyResent?: boolean;
}

export interface Facts {
	/** What this execution, or the one it retries, recorded for the item (stores.ts `RunMemory`). */
	memo?: Memo;
	executionId: string;
	fingerprint: string;
	resendUncertain: boolean;
	/** An earlier identical call of this execution (AI Agent 3.x) that may have been charged. */
	earlierUncertain?: Memo & { kind: 'uncertain' };
	/** How the send is recorded: as the run's, or in a tool call's windows (no run to name). */
	record: 'run' | 'tool';
	/** The account check of a generation made under another key, once made. */
	proof?: { same: boolean; reason: string };
	/** Clear Idempotency Key is on. */
	clearKey?: boolean;
	/** Before n8n 2.14: this execution retries a run n8n stopped in this node (recall.ts `cutOff`). */
	cutOff?: boolean;
	recorded?: Recorded;
	/**
	 * Resending what an attempt n8n did not finish sent: its mark (`again stopped <send>`) was
	 * recorded before this item's, by another retry of that attempt with the option on.
	 */
	resendMark?: boolean;
}

/**
 * What a claim records before the send: `fresh` the run's send; `try` the same, for a try of the
 * execution that recorded the item (its memory decides, not the record); `again` a send again
 * after the execution the memory comes from.
 */
export type Claim = 'fresh' | 'try' | 'again';

export type NotSent =
	/** The earlier failure again (an uncertain one, or a refusal another try cannot pass). */
	| {
			code: 'reported';
			memo: Memo & { kind: 'uncertain' | 'refused' };
			by: 'try' | 'retry' | 'call';
	  }
	| { code: 'interrupted_send'; by: 'stop' | 'tool' | 'retry' | 'resend' | 'key' }
	| { code: 'other_key'; reason: string }
	| { code: 'idempotency_key_used' };

export type Verdict =
	| { kind: 'replay'; answer: StoredAnswer; proven?: string }
	| { kind: 'prove' }
	| { kind: 'claim'; claim: Claim }
	| { kind: 'mark' }
	| { kind: 'send'; claim: Claim }
	| { kind: 'notSent'; why: NotSent };

const notSent = (why: NotSent): Verdict => ({ kind: 'notSent', why });

/** The one rule sorting a failed send: one that may have been charged is uncertain, others refused. */
export function failureKind(facts: { charge: ChargeOutcome }): 'uncertain' | 'refused' {
	return mayHaveBeenCharged(facts) ? 'uncertain' : 'refused';
}

/** The verdict before the durable record is consulted: from the memory alone. */
function fromMemory(facts: Facts): Verdict {
	const { memo } = facts;
	if (!memo) {
		if (facts.earlierUncertain) {
			return notSent({ code: 'reported', memo: facts.earlierUncertain, by: 'call' });
		}
		return { kind: 'claim', claim: 'fresh' };
	}
	const sameExecution = memo.executionId === facts.executionId;
	if (memo.kind === 'generated') {
		if (memo.fingerprint === facts.fingerprint) return { kind: 'replay', answer: memo.answer };
		if (!facts.proof) return { kind: 'prove' };
		if (facts.proof.same) {
			return { kind: 'replay', answer: memo.answer, proven: facts.proof.reason };
		}
		if (facts.resendUncertain) return { kind: 'claim', claim: 'again' };
		return notSent({ code: 'other_key', reason: facts.proof.reason });
	}
	if (memo.kind === 'uncertain') {
		if (sameExecution || !facts.resendUncertain) {
			return notSent({ code: 'reported', memo, by: sameExecution ? 'try' : 'retry' });
		}
		return { kind: 'claim', claim: 'again' };
	}
	if (!sameExecution) return { kind: 'claim', claim: 'again' };
	if (rule(memo.failure.code).retryOnFail) return { kind: 'claim', claim: 'try' };
	return notSent({ code: 'reported', memo, by: 'try' });
}

/** The item's verdict from the facts known so far; `prove`, `claim` and `mark` ask for more. */
export function verdict(facts: Facts): Verdict {
	const before = fromMemory(facts);
	if (before.kind !== 'claim' || !facts.recorded) return before;
	const { claim } = before;
	const { recorded } = facts;
	const { again } = recorded;
	// Before n8n 2.14 a retry of a run n8n stopped here knows that run's sends by the trigger's items.
	const sent = recorded.sent || (facts.cutOff === true && recorded.witness === true);
	// Clear Idempotency Key: the run's first claim of a key finds Clear's mark unset and sends; its
	// twins, later tries and batches, and a retry after a stop find it set. An open key's send had no
	// answer (n8n stopped, or it may have been charged); a used one's was answered.
	const cleared = facts.clearKey === true && !recorded.keyCleared;
	const key = !recorded.key || cleared ? 'unused' : recorded.keyOpen ? 'open' : 'used';
	// Resending on the user's word: an uncertain send of a saved record, or one an attempt n8n did not
	// finish made (its key is that send's own; a try after such a resend was refused is one too).
	const resendingStopped = facts.resendUncertain && sent && claim !== 'again';
	const resending = (claim === 'again' && facts.memo?.kind !== 'refused') || resendingStopped;
	// Two rows with one key: the second is not sent, even on the user's word (each row's resend would
	// pay the key again).
	if (resending && recorded.keyResent) return notSent({ code: 'idempotency_key_used' });
	// A resend is made once per saved record (an attempt n8n did not finish saved none: once, by its
	// mark); what another retry sent after a refusal, or an attempt n8n did not finish, is sent again
	// only on the user's word (Resend Uncertain Generations).
	if (resendingStopped && facts.resendMark === undefined) return { kind: 'mark' };
	if (resending && (again || facts.resendMark)) {
		return notSent({ code: 'interrupted_send', by: 'resend' });
	}
	if (claim === 'again' && again && !facts.resendUncertain) {
		return notSent({ code: 'interrupted_send', by: 'retry' });
	}
	if (claim === 'fresh' && sent && !facts.resendUncertain) {
		return notSent({ code: 'interrupted_send', by: facts.record === 'tool' ? 'tool' : 'stop' });
	}
	// A resend's key is the uncertain send's own. Any other claim, a try's included, finds a key
	// another item or execution used (or a refusal let go, and another used meanwhile).
	if (key === 'open' && !resending && !facts.resendUncertain) {
		return notSent({ code: 'interrupted_send', by: 'key' });
	}
	if (key === 'used' && !resending) return notSent({ code: 'idempotency_key_used' });
	return { kind: 'send', claim };
}

// The words of each "not sent": what was, or may have been, paid for, where to look, what to do.

const windowText = `${TOOL_WINDOW_MS / 3_600_000} to ${(2 * TOOL_WINDOW_MS) / 3_600_000} hours`;

/** The error of an item not sent; `sessionId`: the session the request names, if any. */
export function notSentError(
	node: INode,
	why: NotSent,
	item: { itemIndex: number; sessionId?: string; idempotencyKey: string },
) {
	const { itemIndex, sessionId } = item;
	if (why.code === 'reported') return reportedAgain(node, why, itemIndex);
	const where = sessionId
		? `session ${sessionId}`
		: 'the account\'s sessions titled "API generation"';
	const retry =
		'If it did not run, turn on Options → Resend Uncertain Generations and retry to send it.';
	const words = {
		stop: `Not sent again: an earlier attempt that n8n did not finish (n8n stopped, restarted or lost a worker) sent this generation, so it may have been charged; look in ${where} on the website`,
		tool: `Not sent again: the same call sent this generation within the last ${windowText} and this n8n process does not hold it (n8n restarted, or another queue-mode worker is running it), so it may have been charged; look in ${where} on the website`,
		retry: `Not sent again: a retry of the same failed execution already sent this generation (its result is saved with that retry), so it may have been charged; retry that retry instead, or look in ${where} on the website`,
		resend: `Not sent again: a retry of the same failed execution, with Resend Uncertain Generations on, already sent this generation, so it may have been charged; look in ${where} on the website, and retry that retry instead`,
		key: `Not sent: the Idempotency Key "${item.idempotencyKey.slice(0, 80)}" was used by a generation that got no answer (n8n stopped, or the request timed out or dropped), so it may have been charged; look in ${where} on the website`,
	};
	const text = {
		interrupted_send: () => words[(why as { by: keyof typeof words }).by],
		other_key: () =>
			`Not sent again: an earlier try made this generation under another API key, and the account behind this key could not be confirmed as the same (${(why as { reason: string }).reason}), so neither its images are returned nor is it paid for again; look in ${where} on the website`,
		idempotency_key_used: () =>
			`Not sent: the Idempotency Key "${item.idempotencyKey.slice(0, 80)}" was already used by this node (by this or an earlier execution), and a used key is never sent again; its images are in the output of the execution that used it, or, if n8n stopped that execution before saving it, in the account's sessions titled "API generation"`,
	}[why.code]();
	const keyUsed = why.code === 'idempotency_key_used';
	const charge: ChargeOutcome = keyUsed ? 'not_sent' : 'may_have_been_charged';
	return imagePackError(
		node,
		{ code: why.code, charge, itemIndex, sessionId },
		{
			message: text,
			description: keyUsed
				? 'To generate it anyway, use another key, or turn on Options → Clear Idempotency Key for one run.'
				: retry,
		},
	);
}

/** The failure an earlier try, the execution this one retries, or an earlier call met, again. */
function reportedAgain(
	node: INode,
	why: Extract<NotSent, { code: 'reported' }>,
	itemIndex: number,
) {
	const { failure, kind } = why.memo;
	const facts = { ...failure, code: failure.code ?? ('unknown_error' as const), itemIndex };
	const describe = (next: string) => errorDescription(facts, next);
	if (kind === 'uncertain') {
		const who = {
			try: 'an earlier try of this execution',
			retry: 'the failed execution this one retries',
			call: 'an earlier call of this execution with the same arguments',
		}[why.by];
		// Reported before as sent by an attempt n8n did not finish: the same words again.
		const stopped = failure.code === 'interrupted_send';
		return imagePackError(node, facts, {
			message: stopped
				? failure.reason
				: `Not sent again: ${who} sent this generation and got no clear answer (${facts.code}), so sending it again could pay twice`,
			description: describe(
				why.by === 'retry'
					? 'to send it again after checking, turn on Options → Resend Uncertain Generations and retry the execution with the saved workflow'
					: 'Retry On Fail and repeated calls never send it again',
			),
		});
	}
	// Only a try of the same execution reports a refusal again: a retried execution sends it.
	return imagePackError(node, facts, {
		message: failure.reason,
		description: describe(
			'Refused in an earlier try of this execution and not sent again: another try would be refused the same way. Fix the cause, then retry the execution from Executions: refused items are sent again there.',
		),
	});
}
