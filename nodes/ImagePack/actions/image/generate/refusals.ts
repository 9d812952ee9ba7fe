/**
 * The errors an item gets when a record keeps it from being sent (replay.ts decides which): in words
 * that say what was, or may have been, paid for, where to look, and how to send it anyway.
 */
import type { IExecuteFunctions } from 'n8n-workflow';

import type { Code } from '../../../shared/codes';
import { errorDescription, imagePackError } from '../../../shared/errors';
import type { ItemRun } from './plan';
import type { Memo } from './stores';

/** The failure an earlier try (or the failed execution this one retries) met, reported again. */
export function reportAgain(
	ctx: IExecuteFunctions,
	itemIndex: number,
	{
		memo,
		sameExecution,
	}: { memo: Memo & { kind: 'uncertain' | 'refused' }; sameExecution: boolean },
) {
	const { failure } = memo;
	const facts = { ...failure, code: failure.code ?? ('unknown_error' as const), itemIndex };
	const describe = (next: string) => errorDescription(facts, next);
	if (memo.kind === 'uncertain') {
		return imagePackError(ctx.getNode(), facts, {
			message: `Not sent again: ${sameExecution ? 'an earlier try of this execution' : 'the failed execution this one retries'} sent this generation and got no clear answer (${facts.code}), so sending it again could pay twice`,
			description: describe(
				sameExecution
					? 'Retry On Fail never sends it again'
					: 'to send it again after checking, turn on Options → Resend Uncertain Generations and retry the execution with the saved workflow',
			),
		});
	}
	// Only a try of the same execution reports a refusal again: a retried execution sends it.
	return imagePackError(ctx.getNode(), facts, {
		message: failure.reason,
		description: describe(
			'Refused in an earlier try of this execution and not sent again: another try would be refused the same way. Fix the cause, then retry the execution from Executions: refused items are sent again there.',
		),
	});
}

/** An item not sent because a record says it was, or may have been, paid for: `code` says which. */
export function notSentAgain(
	item: Pick<ItemRun, 'ctx' | 'itemIndex' | 'plan' | 'asTool'>,
	code: Extract<Code, 'interrupted_send' | 'other_key' | 'idempotency_key_used'>,
	detail = '',
) {
	const { ctx, itemIndex, plan } = item;
	const sessionId = plan.request.body.session_id;
	const where = sessionId
		? `session ${sessionId}`
		: 'the account\'s sessions titled "API generation"';
	const words = {
		interrupted_send:
			detail === 'resent'
				? `Not sent again: a retry of the same failed execution already sent this generation again (Resend Uncertain Generations), so it may have been charged; look in ${where} on the website, and retry that retry instead`
				: detail === 'retried'
					? `Not sent again: a retry of the same failed execution already sent this generation (its result is saved with that retry), so it may have been charged; retry that retry instead, or look in ${where} on the website`
					: item.asTool
						? `Not sent again: the same call sent this generation within the last hour and this n8n process does not hold it (n8n restarted, or another queue-mode worker is running it), so it may have been charged; look in ${where} on the website`
						: `Not sent again: an earlier attempt that n8n did not finish (n8n stopped, restarted or lost a worker) sent this generation, so it may have been charged; look in ${where} on the website`,
		other_key: `Not sent again: an earlier try made this generation under another API key, and the account behind this key could not be confirmed as the same (${detail}), so neither its images are returned nor is it paid for again; look in ${where} on the website`,
		idempotency_key_used: `Not sent: the Idempotency Key "${plan.options.idempotencyKey.slice(0, 80)}" was already used by this node (by this or an earlier execution), and a used key is never sent again`,
	}[code];
	const next =
		code === 'idempotency_key_used'
			? 'To generate it anyway, use another key, or turn on Options → Clear Idempotency Key for one run.'
			: 'If it did not run, turn on Options → Resend Uncertain Generations and retry to send it.';
	const charge = code === 'idempotency_key_used' ? 'not_sent' : 'may_have_been_charged';
	return imagePackError(
		ctx.getNode(),
		{ code, charge, itemIndex, sessionId },
		{ message: words, description: next },
	);
}
