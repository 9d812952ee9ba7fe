/**
 * Generate as a tool that must answer in time (MCP clients give a call 60 s): the n8n side of
 * pending.ts (generations held by this process) and hourlyCap.ts (Max Credits per Hour). Both stores
 * are module-level on purpose: they must outlive one tool call. Bounds and what they hold: see there.
 */
import { type IDataObject, type IExecuteFunctions, sleep } from 'n8n-workflow';

import { chargeHint, errorFacts, imagePackError, mayHaveBeenCharged } from '../../../shared/errors';
import type { Answer, Connection } from '../../../transport';
import type { GenerateResponse } from './answer';
import { HourlyCaps } from './hourlyCap';
import type { ItemPlan } from './options';
import { type Held, PendingGenerations, generationKey } from './pending';

type Generated = Answer<GenerateResponse>;

const pending = new PendingGenerations<Generated>();
const hourly = new HourlyCaps();

/** `promise`'s value, or undefined when it takes longer than `ms`. */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
	if (ms === Infinity) return await promise; // a timer would read Infinity as 1 ms
	const stop = new AbortController();
	const timer = sleep(ms, stop.signal).catch(() => {});
	return await Promise.race([promise, timer.then(() => undefined)]).finally(() => stop.abort());
}

/** What the caller is told while the generation runs on: how long, and how to collect it. */
function stillRunning(
	ctx: IExecuteFunctions,
	held: Held<Generated>,
	plan: ItemPlan,
	boundMs: number,
) {
	const ago = Math.round((Date.now() - held.startedAt) / 1000);
	const left = Math.max(
		0,
		Math.round((held.startedAt + plan.options.timeoutMs - Date.now()) / 1000),
	);
	const options = ctx.getNode().parameters.options as IDataObject | undefined;
	const wired = /\$fromAI\(/i.test(String(options?.handle ?? ''));
	const how = wired
		? `call this tool again with the same arguments and handle "${held.handle}"`
		: 'call this tool again with exactly the same arguments';
	const message = `The generation is still running (started ${ago} s ago; a generation takes up to 5 minutes, this one is given up in ${left} s). Nothing more is charged to collect it: ${how}; that call waits up to ${boundMs / 1000} s for the result. With other arguments${wired ? ' and no handle' : ''} a new generation is started and charged.`;
	return { status: 'running', handle: held.handle, started_seconds_ago: ago, message };
}

/**
 * The generation's answer within `boundMs`: the one held for the same request (or `handle`), else
 * the one `send` starts now; `{ running }` when it is not done yet (the request goes on). A handle
 * this process does not hold never sends.
 */
export async function heldAnswer(
	ctx: IExecuteFunctions,
	itemIndex: number,
	plan: ItemPlan,
	connection: Connection,
	boundMs: number,
	send: () => Promise<Generated>,
): Promise<Generated | { running: IDataObject }> {
	const request = { body: plan.request.body, language: plan.options.acceptLanguage };
	const key = generationKey(connection.baseUrl, connection.apiKey, request);
	const uncertain = (error: unknown) => mayHaveBeenCharged(errorFacts(error));
	const { handle } = plan.options;
	const held = handle ? pending.find(handle, key) : pending.join(key, send, uncertain).held;
	if (!held) {
		throw imagePackError(
			ctx.getNode(),
			{ code: 'unknown_handle', charge: 'not_sent', itemIndex },
			{
				message: `No generation with handle "${handle.slice(0, 40)}" is held by this n8n process: it was collected already, finished more than ${pending.limits.doneTtlMs / 60_000} minutes ago, n8n restarted, or another queue-mode worker ran it. Nothing was sent. ${chargeHint(plan.request.body.session_id)}; call without the handle only if the user wants a new, charged generation`,
			},
		);
	}
	const outcome = await within(held.done, boundMs);
	if (!outcome) return { running: stillRunning(ctx, held, plan, boundMs) };
	pending.collected(held);
	if (outcome.ok) return outcome.answer;
	throw outcome.error;
}

/** Takes `estimate` from Max Credits per Hour (0 = none) before sending; returns how to settle it. */
export function reserveHourly(
	ctx: IExecuteFunctions,
	itemIndex: number,
	estimate: number,
	cap: number,
): (charged: number) => void {
	if (!(cap > 0)) return () => {};
	const node = `${ctx.getWorkflow().id ?? ''} ${ctx.getNode().id}`;
	const reservation = hourly.reserve(node, estimate, cap);
	if (reservation.ok) return (charged) => hourly.settle(reservation.spend, charged);
	throw imagePackError(
		ctx.getNode(),
		{ code: 'credit_cap_reached', charge: 'not_sent', itemIndex },
		{
			message: `The hourly credit cap of this node is reached: ${reservation.spent} of ${cap} credits (Max Credits per Hour) were spent or reserved in the last hour by this node in this n8n process, and this request could cost ${estimate} more; enough credits free up in about ${Math.ceil(reservation.freesInMs / 60_000)} min`,
			description:
				'Nothing was sent and no credits were used. Raise Max Credits per Hour to allow more.',
		},
	);
}
