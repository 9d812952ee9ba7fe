/**
 * One poll of the Image Pack Trigger: Fetch Test Event, the first "now" activation (the baseline), or
 * a delivery of new publications. The poll takes its turn (pacing.ts), makes sure the stored cursor
 * is the history of the account behind the key (account.ts), reads (read.ts) what the cursor
 * (cursor.ts) asks for, and stores the cursor's next state only when it delivers or changes.
 */
import type {
	IDataObject,
	INodeExecutionData,
	INodeProperties,
	IPollFunctions,
} from 'n8n-workflow';

import { errorFacts, imagePackError } from '../shared/errors';
import type { PublicationRecord } from '../shared/publications';
import { boundedNumber } from '../shared/parameters';
import { getConnection, getPublication } from '../transport';
import { bindToAccount, logFreshStart, where } from './account';
import {
	OverlapTooLargeError,
	addPage,
	baselineRead,
	baselineSince,
	deliverable,
	finishBaseline,
	finishPoll,
	startBaseline,
	startPoll,
	type PollRun,
} from './cursor';
import { maxPerPollProperty, startIdProperty } from './description';
import { UNBOUNDED, pollTimes, takeTurn } from './pacing';
import { type Poll, fetchManifests, isCut, listPage, newestPublication } from './read';
import {
	MAX_OVERLAP,
	type CursorState,
	initialState,
	queryKey,
	readState,
	sameState,
	seenEmpty,
} from './state';

/** List pages one poll reads at most (10,000 records); the rest is left to the next poll. */
const MAX_PAGES_PER_POLL = 50;
/**
 * Polls in a row that may run out of time before anything is complete (each returns nothing and
 * the next goes on from the same place) before one fails saying so: a slow moment passes quietly, a
 * server that is always too slow for the poll's time does not.
 */
export const STALLED_POLLS = 3;

type StartFrom = 'now' | 'beginning' | 'id';

/** Assigns the state as fresh top-level values, so n8n notices the change and saves all of it. */
function writeState(staticData: IDataObject, state: CursorState): void {
	for (const key of Object.keys(staticData)) {
		if (!(key in state)) delete staticData[key];
	}
	for (const [key, value] of Object.entries(state)) staticData[key] = value as IDataObject[string];
}

function toItem(record: PublicationRecord, detail?: IDataObject): INodeExecutionData {
	const json: IDataObject = { ...(record as IDataObject) };
	if (detail) json.manifest = detail.manifest as IDataObject;
	return { json };
}

/** The cursor's refusal of an overlap it cannot honour, as n8n shows errors; others unchanged. */
function asPollError(ctx: IPollFunctions, error: unknown): unknown {
	if (!(error instanceof OverlapTooLargeError)) return error;
	return imagePackError(
		ctx.getNode(),
		{ code: 'overlap_too_large', charge: 'not_charged' },
		{
			message: error.message,
			description: `Honouring it would mean re-reading that many ids on every poll. Nothing was delivered and nothing was skipped: the trigger goes on as soon as the server announces an overlap of at most ${MAX_OVERLAP}.`,
		},
	);
}

/** "Fetch Test Event": the newest publication; static data is neither read nor written. */
async function testEvent(poll: Poll, includeManifest: boolean) {
	const { ctx, connection, times } = poll;
	const { newest } = await newestPublication(poll);
	if (!newest) {
		throw imagePackError(
			ctx.getNode(),
			{ code: 'no_publications', charge: 'not_charged' },
			{
				message: 'This account has no publications yet',
				description:
					'Publish an image pack on the website (or wait for a seller to), then fetch a test event again.',
			},
		);
	}
	const detail = includeManifest
		? (await getPublication(ctx, connection, newest.id, { deadline: times.deadline })).body
		: undefined;
	return [[toItem(newest, detail)]];
}

/** Why readPages stopped: `enough` said so, the poll's time, or MAX_PAGES_PER_POLL. */
type ReadEnd = 'enough' | 'time' | 'pages';

/**
 * Reads list pages into `run` until `enough(next)` says so (`next`: addPage's): the first page
 * always, more while the poll has time, at most MAX_PAGES_PER_POLL.
 */
async function readPages(
	poll: Poll,
	run: PollRun,
	enough: (next: number | null) => boolean | Promise<boolean>,
): Promise<ReadEnd> {
	for (let pages = 0; pages < MAX_PAGES_PER_POLL; pages++) {
		if (pages > 0 && Date.now() > poll.times.stopAt) return 'time';
		const next = addPage(run, await listPage(poll, run.nextSince));
		if (await enough(next)) return 'enough';
	}
	return 'pages';
}

/**
 * The "now" starting point (the first activation, or a fresh start): finds the newest id
 * (O(log max id) requests) and reads the overlap below it, which counts as delivered; nothing is
 * emitted. When the poll's time ends before the overlap is read, it fails and stores nothing: the
 * ids it did not read were visible before "now" or may still commit after it, and only a read now
 * tells which (docs/polling.md).
 */
async function baseline(poll: Poll, key: string, fp: string, rev: number): Promise<CursorState> {
	const asked = Date.now();
	const { newest, overlap } = await newestPublication(poll);
	if (!newest) return { ...initialState(key, 0, fp, rev), emptyAt: asked };
	const since = baselineSince(newest.id, overlap);
	const run = startBaseline(key, since, newest.id, fp, rev);
	const end = await readPages(poll, run, (next) => baselineRead(run, newest.id, next));
	if (end !== 'enough') {
		const readTo = run.pages[run.pages.length - 1]?.end ?? since;
		throw imagePackError(
			poll.ctx.getNode(),
			{ code: 'timeout', charge: 'not_charged' },
			{
				message: `The trigger could not read where "now" is within one poll: of the ${newest.id - since} ids below the newest publication (${newest.id}) it had read ${since + 1} to ${readTo} when the poll's time ran out`,
				description:
					'Start From "now" reads the re-read overlap the server announces below the newest publication, so that publications from before now are never delivered and one committing late is not lost. Nothing was stored: the next poll (or activation) tries again. Poll times further apart give each poll more time.',
			},
		);
	}
	return finishBaseline(run);
}

/**
 * One poll's delivery: pages and their manifests in turn, until Max Publications per Poll, the
 * size bound or the poll's time is reached. What is complete is delivered, also when its last
 * request was cut by the poll's time; the next poll continues after it. `outOfTime`: the poll's
 * time (or a cut request) ended it early; `cut`: the request it cut, if any.
 */
async function drain(
	poll: Poll,
	state: CursorState,
	{ includeManifest, maxPerPoll }: { includeManifest: boolean; maxPerPoll: number },
) {
	const run = startPoll(state);
	const details: IDataObject[] = [];
	const chars = { used: 0 };
	let cut: unknown;
	const end = await readPages(poll, run, async (next) => {
		// A publication that committed between two pages below what was read: deliver below it.
		if (run.late !== undefined) return true;
		const wanted = deliverable(run, maxPerPoll);
		if (includeManifest) {
			const todo = run.fresh.slice(details.length, wanted);
			const full = await fetchManifests(poll, todo, details, chars);
			if (full || details.length < wanted) return true;
		}
		return run.fresh.length >= maxPerPoll || next === null;
	}).catch((error: unknown) => {
		if (!isCut(error)) throw error;
		cut = error;
		return 'time' as const;
	});
	const count = deliverable(run, includeManifest ? details.length : maxPerPoll);
	const items = run.fresh.slice(0, count).map((record, index) => toItem(record, details[index]));
	const none = run.pages.length > 0 && run.newest === undefined; // an answer listed nothing at all
	return { next: finishPoll(run, count), items, cut, outOfTime: end === 'time', none };
}

/**
 * The error of a poll that ran out of time before anything was complete, STALLED_POLLS times in a
 * row; `cut`: the request the last one cut, if any.
 */
function stalledError(ctx: IPollFunctions, polls: number, seconds: string, cut: unknown) {
	const facts = cut === undefined ? undefined : errorFacts(cut);
	const last = facts ? ` The last one: ${facts.reason}.` : '';
	return imagePackError(
		ctx.getNode(),
		{
			code: facts?.code ?? 'timeout',
			httpStatus: facts?.httpStatus,
			requestId: facts?.requestId,
			charge: 'not_charged',
		},
		{
			message: `The Image Pack API answered too slowly for the trigger: ${polls} polls in a row ran out of their time (${seconds} seconds each) before a publication was complete`,
			description:
				`${last.trim()} Nothing was delivered and nothing was skipped; the next poll goes on from the same place. A poll has until shortly before the next poll time (or n8n's poll budget): poll times further apart, or Include Manifest off, give it more room.`.trim(),
		},
	);
}

/** A number parameter, bounded by its property: a bad value fails the poll before any request. */
function numberParameter(ctx: IPollFunctions, property: INodeProperties): number {
	try {
		return boundedNumber(property, ctx.getNodeParameter(property.name, undefined));
	} catch (error) {
		throw imagePackError(
			ctx.getNode(),
			{ code: 'invalid_parameter', parameter: property.name, charge: 'not_sent' },
			{ message: (error as Error).message },
		);
	}
}

/** The trigger's poll(): `null` when nothing is new (or this poll skips its turn). */
export async function pollPublications(
	ctx: IPollFunctions,
): Promise<INodeExecutionData[][] | null> {
	const includeManifest = ctx.getNodeParameter('includeManifest', true) as boolean;
	const maxPerPoll = numberParameter(ctx, maxPerPollProperty);
	const startFrom = ctx.getNodeParameter('startFrom', 'now') as StartFrom;
	const startId = startFrom === 'id' ? numberParameter(ctx, startIdProperty) : 0;
	const connection = await getConnection(ctx);
	if (ctx.getMode() === 'manual') {
		return await testEvent({ ctx, connection, times: UNBOUNDED }, includeManifest);
	}

	const key = queryKey(startFrom, startId, connection.baseUrl);
	const staticData = ctx.getWorkflowStaticData('node');
	const stored = readState(staticData, key);
	const started = Date.now();
	const poll: Poll = { ctx, connection, times: pollTimes(ctx) };
	// What identifies the trigger, whatever state object n8n handed this poll.
	const node = ctx.getNode();
	const trigger = `${ctx.getWorkflow().id ?? ''}|${node.id}|${node.name}|${key}`;
	const turn = await takeTurn(trigger, stored?.rev, poll.times.deadline);
	if (typeof turn === 'string') return null; // another poll ran, or its delivery is not committed yet
	try {
		/** Stores the state unless another poll took this trigger over meanwhile. */
		const commit = (state: CursorState): boolean => {
			if (!turn.holds()) return false;
			if (!stored || !sameState(state, stored)) writeState(staticData, state);
			return true;
		};
		let state = stored;
		if (stored) {
			const decision = await bindToAccount(poll, stored, startFrom);
			if (decision.keep === undefined) logFreshStart(ctx, decision, startFrom);
			state = decision.keep;
		}
		// A fresh start replaces a stored state with a later revision (the poll guard compares them).
		const rev = stored ? stored.rev + 1 : 0;
		if (!state && startFrom === 'now') {
			commit(await baseline(poll, key, connection.fingerprint, rev));
			return null;
		}
		state ??= initialState(key, startFrom === 'id' ? startId : 0, connection.fingerprint, rev);
		const drained = await drain(poll, state, { includeManifest, maxPerPoll });
		const { items, cut, outOfTime } = drained;
		// "Now" without a witness: when the account was last seen empty tells another key's apart.
		const next =
			startFrom === 'now' && drained.none ? seenEmpty(drained.next, started) : drained.next;
		if (!commit(next)) return null; // taken over after running far too long: discarded
		const stalls = turn.ranOut(items.length === 0 && outOfTime && next === state);
		if (items.length === 0) {
			const seconds = ((poll.times.deadline - started) / 1000).toFixed(1);
			if (stalls >= STALLED_POLLS) throw stalledError(ctx, stalls, seconds, cut);
			if (stalls > 0) {
				const why = cut === undefined ? '' : ` (${errorFacts(cut).reason})`;
				ctx.logger.warn(
					`${where(ctx)}: the poll ran out of its time (${seconds} seconds) before a publication was complete${why}. Nothing was delivered or skipped; the next poll goes on from the same place.`,
				);
			}
			return null;
		}
		turn.delivered(next.rev);
		return [items];
	} catch (error) {
		throw asPollError(ctx, error);
	} finally {
		turn.release();
	}
}
