import type {
	IDataObject,
	INodeExecutionData,
	INodeType,
	INodeTypeDescription,
	IPollFunctions,
} from 'n8n-workflow';
import { NodeConnectionTypes } from 'n8n-workflow';

import {
	MAX_OVERLAP,
	OverlapTooLargeError,
	addPage,
	baselineSince,
	finishBaseline,
	finishPoll,
	hash53,
	initialState,
	readState,
	sameState,
	startBaseline,
	startPoll,
	type CursorState,
	type PublicationRecord,
} from './shared/cursor';
import { imagePackError } from './shared/errors';
import { takeTurn } from './shared/polling';
import { type Connection, getConnection } from './transport';
import { DEFAULT_MAX_PER_POLL, MAX_MAX_PER_POLL, properties } from './trigger/description';
import {
	UNBOUNDED,
	fetchDetail,
	fetchManifests,
	isCut,
	listPage,
	newestPublication,
	pollTimes,
	type PollTimes,
} from './trigger/read';

/** List pages one poll reads at most (10,000 records); the rest is left to the next poll. */
export const MAX_PAGES_PER_POLL = 50;

type StartFrom = 'now' | 'beginning' | 'id';

function queryKey(startFrom: StartFrom, startId: number, baseUrl: string): string {
	const from = startFrom === 'id' ? `id:${startId}` : startFrom;
	return `${from}|${hash53(baseUrl.toLowerCase())}`;
}

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
async function testEvent(ctx: IPollFunctions, connection: Connection, includeManifest: boolean) {
	const { newest } = await newestPublication(ctx, connection, UNBOUNDED);
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
		? await fetchDetail(ctx, connection, newest.id, UNBOUNDED)
		: undefined;
	return [[toItem(newest, detail)]];
}

/**
 * First activation with Start From "now": finds the newest id (O(log max id) requests) and reads the
 * overlap below it, which counts as delivered; nothing is emitted.
 */
async function baseline(
	ctx: IPollFunctions,
	connection: Connection,
	key: string,
	times: PollTimes,
): Promise<CursorState> {
	const { newest, overlap } = await newestPublication(ctx, connection, times);
	if (!newest) return initialState(key, 0);
	const run = startBaseline(key, baselineSince(newest.id, overlap), newest.id);
	for (let pages = 0; pages < MAX_PAGES_PER_POLL; pages++) {
		if (pages > 0 && Date.now() > times.stopAt) break;
		const step = addPage(run, await listPage(ctx, connection, run.nextSince, times));
		if (step.next === null || run.nextSince >= newest.id) break;
	}
	return finishBaseline(run);
}

interface Drain {
	state: CursorState;
	includeManifest: boolean;
	maxPerPoll: number;
	times: PollTimes;
}

/**
 * One poll's delivery: pages and their manifests in turn, until Max Publications per Poll, the
 * size bound or the poll's time is reached. What is complete is delivered, also when its last
 * request was cut by the poll's time; the next poll continues after it.
 */
async function drain(ctx: IPollFunctions, connection: Connection, options: Drain) {
	const { includeManifest, maxPerPoll, times } = options;
	const run = startPoll(options.state);
	const details: IDataObject[] = [];
	const chars = { used: 0 };
	const read = async () => {
		for (let pages = 0; pages < MAX_PAGES_PER_POLL; pages++) {
			if (pages > 0 && Date.now() > times.stopAt) return;
			const step = addPage(run, await listPage(ctx, connection, run.nextSince, times));
			const wanted = Math.min(run.fresh.length, maxPerPoll);
			if (includeManifest) {
				const todo = run.fresh.slice(details.length, wanted);
				const full = await fetchManifests(ctx, connection, todo, times, details, chars);
				if (full || details.length < wanted) return;
			}
			if (run.fresh.length >= maxPerPoll || step.next === null) return;
		}
	};
	const stopped = await read().then(
		() => undefined,
		(error: unknown) => {
			if (isCut(error)) return error;
			throw error;
		},
	);
	const count = includeManifest ? details.length : Math.min(run.fresh.length, maxPerPoll);
	if (stopped !== undefined && count === 0) {
		throw stopped;
	}
	const items = run.fresh.slice(0, count).map((record, index) => toItem(record, details[index]));
	return { next: finishPoll(run, count), items };
}

function maxPerPollOf(ctx: IPollFunctions): number {
	const value = Math.floor(Number(ctx.getNodeParameter('maxPerPoll', DEFAULT_MAX_PER_POLL)));
	return Number.isFinite(value)
		? Math.min(MAX_MAX_PER_POLL, Math.max(1, value))
		: DEFAULT_MAX_PER_POLL;
}

export class ImagePackTrigger implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Image Pack Trigger',
		name: 'imagePackTrigger',
		icon: { light: 'file:imagePack.svg', dark: 'file:imagePack.dark.svg' },
		group: ['trigger'],
		version: 1,
		subtitle:
			'={{$parameter["includeManifest"] ? "New publications, with manifest" : "New publications"}}',
		description: 'Starts the workflow when a seller publishes an image pack',
		defaults: { name: 'Image Pack Trigger' },
		builderHint: {
			searchHint:
				"Polls for newly published image packs: one item per publication (id, pack_id, version, style_code, published_at; the raw manifest with Include Manifest). To get the images: Image Pack publication get with the item's id (its normalized.images lists each image's download_url and note), Split Out normalized.images, skip empty download_url (deleted images), then Image Pack file download with download_url. Start From decides whether earlier publications are delivered.",
			relatedNodes: [
				{
					nodeType: 'n8n-nodes-imagepack.imagePack',
					relationHint:
						"publication get with the trigger item's id, then file download with each image's download_url",
				},
				{
					nodeType: 'n8n-nodes-base.splitOut',
					relationHint: 'One item per image of normalized.images before file download',
				},
			],
		},
		polling: true,
		inputs: [],
		outputs: [NodeConnectionTypes.Main],
		credentials: [{ name: 'imagePackApi', required: true }],
		properties,
	};

	async poll(this: IPollFunctions): Promise<INodeExecutionData[][] | null> {
		const includeManifest = this.getNodeParameter('includeManifest', true) as boolean;
		const connection = await getConnection(this);
		if (this.getMode() === 'manual') return await testEvent(this, connection, includeManifest);

		const startFrom = this.getNodeParameter('startFrom', 'now') as StartFrom;
		const startId = Math.max(0, Math.floor(Number(this.getNodeParameter('startId', 0)) || 0));
		const key = queryKey(startFrom, startId, connection.baseUrl);
		const staticData = this.getWorkflowStaticData('node');
		const stored = readState(staticData, key);
		const times = pollTimes(this);
		// What identifies the trigger, whatever state object n8n handed this poll.
		const node = this.getNode();
		const trigger = `${this.getWorkflow().id ?? ''}|${node.id}|${node.name}|${key}`;
		const turn = await takeTurn(trigger, stored?.rev, times.deadline);
		if (typeof turn === 'string') return null; // another poll ran, or its delivery is not committed yet
		try {
			/** Stores the state unless another poll took this trigger over meanwhile. */
			const commit = (state: CursorState): boolean => {
				if (!turn.holds()) return false;
				if (!stored || !sameState(state, stored)) writeState(staticData, state);
				return true;
			};
			if (!stored && startFrom === 'now') {
				commit(await baseline(this, connection, key, times));
				return null;
			}
			const { next, items } = await drain(this, connection, {
				state: stored ?? initialState(key, startFrom === 'id' ? startId : 0),
				includeManifest,
				maxPerPoll: maxPerPollOf(this),
				times,
			});
			if (!commit(next)) return null; // taken over after running far too long: discarded
			if (items.length === 0) return null;
			turn.delivered(next.rev);
			return [items];
		} catch (error) {
			throw asPollError(this, error);
		} finally {
			turn.release();
		}
	}
}
