/**
 * Send, replay, prove the account, or not sent: the one decision of the money path, for one item,
 * from what is known of it. Pure. execute.ts's item sequence asks it, hands it the facts it asks for
 * (the account check of a generation made under another key, then what the durable record held
 * before this item's claim), and asks again; docs/retry.md has the same rules as tables.
 *
 * What an item came to earlier, in one vocabulary (`Outcome`, stores.ts):
 * - generated: returned again, never sent again (made under another key: once the account is
 *   confirmed);
 * - uncertain (sent, no clear answer: it may have been charged; or reported so by the node): never
 *   sent again by the same execution; a retry of it sends it only with Resend Uncertain
 *   Generations, once per saved record;
 * - refused (nothing charged) or never sent: a retried execution sends it again; a try of the same
 *   execution (Retry On Fail) only when its code says a second try can pass.
 * With no earlier outcome, the ledger decides: a send of this run recorded before means an attempt
 * n8n did not finish sent it (`interrupted_send`), whatever the options; an open Idempotency Key is
 * reported (`interrupted_send`), a used one is never sent again (`idempotency_key_used`).
 */
import type { INode } from 'n8n-workflow';

import { rule } from '../../../shared/codes';
import {
	type ChargeOutcome,
	errorDescription,
	imagePackError,
	mayHaveBeenCharged,
} from '../../../shared/errors';
import { TOOL_WINDOW_MS } from './ledger';
import type { Memo, StoredAnswer } from './stores';

/** What the ledger held of the item's values before its claim (claims.ts `claimSend`). */
export interface Recorded {
	/**
	 * The run's send (before n8n 2.14, for a retry of a run n8n stopped here, also under the
	 * trigger's items), or a call's window for a tool call with no run to name.
	 */
	sent: boolean;
	/** The send again after the saved record this one comes from (another retry of it sent it). */
	again: boolean;
	/** The Idempotency Key under this account: open (claimed, its run not ended) or used. */
	key: 'unused' | 'open' | 'used';
}

export interface Facts {
	/** What this execution, or the one it retries, recorded for the item (stores.ts `RunMemory`). */
	memo?: Memo;
	executionId: string;
	fingerprint: string;
	/** Resend Uncertain Generations: a retry resends what its saved record reports maybe charged. */
	resendUncertain: boolean;
	/** An earlier identical call of this execution (AI Agent 3.x) that may have been charged. */
	earlierUncertain?: Memo & { kind: 'uncertain' };
	/** How the send is recorded: as the run's, or in a tool call's windows (no run to name). */
	record: 'run' | 'tool';
	/** The account check of a generation made under another key, once made. */
	proof?: { same: boolean; reason: string };
	recorded?: Recorded;
}

/**
 * What a claim records before the send: `fresh` the run's send; `try` the same, for a try of the
 * execution that recorded the item (its memory decides, not the record); `again` a send again
 * after the saved record the memory comes from.
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
		return notSent({ code: 'other_key', reason: facts.proof.reason });
	}
	if (memo.kind === 'uncertain') {
		if (!sameExecution && facts.resendUncertain) return { kind: 'claim', claim: 'again' };
		// Sent under another key with no clear answer: this account may never have been asked, or
		// may have paid (a new key of the same account); nothing proves which.
		if (memo.fingerprint && memo.fingerprint !== facts.fingerprint) {
			return notSent({
				code: 'other_key',
				reason: 'that try got no clear answer, so there is no file to ask the account about',
			});
		}
		return notSent({ code: 'reported', memo, by: sameExecution ? 'try' : 'retry' });
	}
	if (!sameExecution) return { kind: 'claim', claim: 'again' };
	if (rule(memo.failure.code).retryOnFail) return { kind: 'claim', claim: 'try' };
	return notSent({ code: 'reported', memo, by: 'try' });
}

/** The item's verdict from the facts known so far; `prove` and `claim` ask for more. */
export function verdict(facts: Facts): Verdict {
	const before = fromMemory(facts);
	if (before.kind !== 'claim' || !facts.recorded) return before;
	const { claim } = before;
	const { sent, again, key } = facts.recorded;
	// A resend is the user's word on what a saved record reported maybe charged: its key is that
	// send's own. Anything else finds a key used or open by another item or execution.
	const resending = claim === 'again' && facts.memo?.kind === 'uncertain';
	// Once per saved record: another retry of the same execution sent it already.
	if (claim === 'again' && again) {
		return notSent({ code: 'interrupted_send', by: resending ? 'resend' : 'retry' });
	}
	// A refusal sent since by another retry of the same execution (a retry of the same failed
	// parent runs under the same run); its own record left in by a busy database is no reason.
	const memo = facts.memo;
	if (claim === 'again' && sent && memo?.kind === 'refused' && !memo.left) {
		return notSent({ code: 'interrupted_send', by: 'retry' });
	}
	// Sent by an attempt n8n did not finish: never sent again by a new claim (its own retry
	// reports it; a retry of that retry resends it, from the record this one saves).
	if (claim === 'fresh' && sent) {
		return notSent({ code: 'interrupted_send', by: facts.record === 'tool' ? 'tool' : 'stop' });
	}
	if (!resending && key === 'open') return notSent({ code: 'interrupted_send', by: 'key' });
	if (!resending && key === 'used') return notSent({ code: 'idempotency_key_used' });
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
	const resend =
		'If it did not run, retry this execution from Executions with the saved workflow and Options → Resend Uncertain Generations on: the items it reports maybe charged are sent again, once.';
	const next = {
		stop: resend,
		tool: resend,
		retry: 'Retry that retry instead: it holds the result.',
		resend: 'Retry that retry instead: it holds the result.',
		key: 'If it did not run, give the product a new key (for example {{ $json.sku }}-v2).',
	};
	const words = {
		stop: `Not sent again: an earlier attempt that n8n did not finish (n8n stopped, restarted or lost a worker) sent this generation, so it may have been charged; look in ${where} on the website`,
		tool: `Not sent again: the same call sent this generation within the last ${windowText} and this n8n process does not hold it (n8n restarted, or another queue-mode worker is running it), so it may have been charged; look in ${where} on the website`,
		retry: `Not sent again: a retry of the same failed execution already sent this generation (its result is saved with that retry), so it may have been charged; retry that retry instead, or look in ${where} on the website`,
		resend: `Not sent again: a retry of the same failed execution, with Resend Uncertain Generations on, already sent this generation, so it may have been charged; look in ${where} on the website, and retry that retry instead`,
		key: `Not sent: the Idempotency Key "${item.idempotencyKey.slice(0, 80)}" was used by a generation that got no answer (it is still running, n8n stopped before its run ended, or the request timed out or dropped), so it may have been charged; look in ${where} on the website`,
	};
	const text = {
		interrupted_send: () => words[(why as { by: keyof typeof words }).by],
		other_key: () =>
			`Not sent again: an earlier try made this generation under another API key, and the account behind this key could not be confirmed as the same (${(why as { reason: string }).reason}), so neither its images are returned nor is it paid for again; look in ${where} on the website`,
		idempotency_key_used: () =>
			`Not sent: the Idempotency Key "${item.idempotencyKey.slice(0, 80)}" was already used by this node (by this or an earlier execution), and a used key is never sent again; its images are in the output of the execution that used it (or returned by a retry of it, if it failed), or, if n8n stopped before saving it, in the account's sessions titled "API generation"`,
	}[why.code]();
	const keyUsed = why.code === 'idempotency_key_used';
	const charge: ChargeOutcome = keyUsed ? 'not_sent' : 'may_have_been_charged';
	return imagePackError(
		node,
		{ code: why.code, charge, itemIndex, sessionId },
		{
			message: text,
			description: {
				interrupted_send: () => next[(why as { by: keyof typeof next }).by],
				other_key: () => resend,
				idempotency_key_used: () =>
					'To generate it again, give it a new key (for example {{ $json.sku }}-v2): a used key is never sent again.',
			}[why.code](),
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
		// Reported before by the node itself (sent by an attempt n8n did not finish, another key's
		// generation): the same words again.
		const stopped = failure.code === 'interrupted_send' || failure.code === 'other_key';
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
