import type {
	IDataObject,
	INodeExecutionData,
	INodeType,
	INodeTypeDescription,
	IPollFunctions,
} from 'n8n-workflow';
import { NodeConnectionTypes } from 'n8n-workflow';

import {
	PAGE_LIMIT,
	addPage,
	baselineSince,
	baselineState,
	findNewest,
	finishPoll,
	freshRecords,
	hash53,
	initialState,
	readState,
	sameState,
	startPoll,
	type CursorState,
	type ListPage,
	type PublicationRecord,
} from './shared/cursor';
import {
	isPollTeardown,
	pollTeardownError,
	shortestPollGapMs,
	takeTurn,
	type PollTimeItem,
} from './shared/polling';
import { imagePackError } from './shared/errors';
import {
	type Connection,
	PUBLICATIONS_PATH,
	getConnection,
	getPublication,
	listPublications,
} from './transport';
/** List pages one poll reads at most (10,000 records); the rest is left to the next poll. */
export const MAX_PAGES_PER_POLL = 50;
/** Detail requests in flight at once when attaching manifests. */
export const MANIFEST_CONCURRENCY = 4;
/** Share of the poll's time spent on reading; the rest is headroom for the last requests and the hand-off. */
const BUDGET_SHARE = 0.8;

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
	staticData.v = state.v;
	staticData.queryKey = state.queryKey;
	staticData.start = state.start;
	staticData.cursor = state.cursor;
	staticData.overlap = state.overlap;
	staticData.window = { ...state.window };
	staticData.delivered = state.delivered;
	staticData.rev = state.rev;
}

/**
 * When this poll stops reading and delivers what it has: within n8n's poll budget (durable scheduler:
 * about 36 s) and before the next poll time can fire (legacy scheduler: a poll time firing during a
 * poll disturbs it, see shared/polling.ts).
 */
function pollDeadline(ctx: IPollFunctions): number {
	const host = ctx as { getPollBudgetMs?: unknown };
	let budget = Number.POSITIVE_INFINITY;
	if (typeof host.getPollBudgetMs === 'function') {
		const value: unknown = (host.getPollBudgetMs as () => unknown).call(ctx);
		if (typeof value === 'number' && Number.isFinite(value) && value > 0) budget = value;
	}
	const pollTimes = ctx.getNodeParameter('pollTimes', {}) as { item?: PollTimeItem[] };
	return Date.now() + Math.min(budget, shortestPollGapMs(pollTimes.item)) * BUDGET_SHARE;
}

async function listPage(
	ctx: IPollFunctions,
	connection: Connection,
	since: number,
	limit: number,
): Promise<ListPage> {
	const { body } = await listPublications(ctx, connection, { sinceId: since, limit });
	if (typeof body !== 'object' || body === null || !Array.isArray(body.items)) {
		throw imagePackError(
			ctx.getNode(),
			{ code: 'server_fault', charge: 'not_charged' },
			{
				message: 'The publication list answer has no items array',
				description: `GET ${PUBLICATIONS_PATH}?since_id=${since}&limit=${limit} answered: ${JSON.stringify(body).slice(0, 200)}`,
				secret: connection.apiKey,
			},
		);
	}
	return body;
}

async function newestPublication(
	ctx: IPollFunctions,
	connection: Connection,
	deadline = Number.POSITIVE_INFINITY,
) {
	let overlap: number | undefined;
	const newest = await findNewest(
		async (since) => {
			const page = await listPage(ctx, connection, since, 1);
			overlap = page.reread_overlap;
			return page.items[0] ?? null;
		},
		() => Date.now() > deadline,
		(message) => {
			throw imagePackError(
				ctx.getNode(),
				{ code: 'server_fault', charge: 'not_charged' },
				{
					message,
					description: `While searching the newest publication with GET ${PUBLICATIONS_PATH}?since_id=…&limit=1`,
				},
			);
		},
	);
	return { newest, overlap };
}

async function fetchDetail(
	ctx: IPollFunctions,
	connection: Connection,
	id: number,
): Promise<IDataObject> {
	return (await getPublication(ctx, connection, id)).body;
}

function toItem(record: PublicationRecord, detail?: IDataObject): INodeExecutionData {
	const json: IDataObject = { ...(record as IDataObject) };
	if (detail) json.manifest = detail.manifest as IDataObject;
	return { json };
}

/**
 * Fetches the details of `records` in order with bounded concurrency, appending them to `details`.
 * Stops starting new ones once the deadline has passed (after at least one batch per poll), so
 * `details` is always a complete prefix; any failed request fails the poll.
 */
async function fetchManifests(
	ctx: IPollFunctions,
	connection: Connection,
	records: PublicationRecord[],
	deadline: number,
	details: IDataObject[],
): Promise<void> {
	for (let at = 0; at < records.length; at += MANIFEST_CONCURRENCY) {
		if (details.length > 0 && Date.now() > deadline) return;
		const batch = records.slice(at, at + MANIFEST_CONCURRENCY);
		details.push(
			...(await Promise.all(
				batch.map(async (record) => await fetchDetail(ctx, connection, record.id)),
			)),
		);
	}
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
		properties: [
			{
				displayName:
					'Emits one item per new publication, oldest first. Each publication is delivered exactly once, including ones that become visible late.',
				name: 'notice',
				type: 'notice',
				default: '',
			},
			{
				displayName: 'Include Manifest',
				name: 'includeManifest',
				type: 'boolean',
				default: true,
				builderHint: {
					propertyHint:
						'Off when the next node is Image Pack publication get: it reads the manifest anyway and adds normalized.images, the shape file download needs.',
				},
				description:
					'Whether to fetch each publication’s detail and add its manifest (the frozen pack document with download URLs) to the item',
			},
			{
				displayName: 'Start From',
				name: 'startFrom',
				type: 'options',
				default: 'now',
				description:
					'Which publications the trigger delivers when it starts. Changing it starts over.',
				options: [
					{
						name: 'Now',
						value: 'now',
						description: 'Only publications that appear after the workflow is activated',
					},
					{
						name: 'Beginning',
						value: 'beginning',
						description: 'Every publication of the account, oldest first, then new ones',
					},
					{
						name: 'After a Publication ID',
						value: 'id',
						description: 'Publications with an ID greater than Start ID, then new ones',
					},
				],
			},
			{
				displayName: 'Start ID',
				name: 'startId',
				type: 'number',
				default: 0,
				typeOptions: { minValue: 0, numberPrecision: 0 },
				description: 'Publications with an ID greater than this are delivered',
				displayOptions: { show: { startFrom: ['id'] } },
			},
		],
	};

	async poll(this: IPollFunctions): Promise<INodeExecutionData[][] | null> {
		const includeManifest = this.getNodeParameter('includeManifest', true) as boolean;
		const connection = await getConnection(this);

		if (this.getMode() === 'manual') {
			// "Fetch Test Event": the newest publication; static data is neither read nor written.
			const { newest } = await newestPublication(this, connection);
			if (!newest) {
				throw imagePackError(
					this.getNode(),
					{ code: 'no_publications', charge: 'not_charged' },
					{
						message: 'This account has no publications yet',
						description:
							'Publish an image pack on the website (or wait for a seller to), then fetch a test event again.',
					},
				);
			}
			const detail = includeManifest ? await fetchDetail(this, connection, newest.id) : undefined;
			return [[toItem(newest, detail)]];
		}

		const startFrom = this.getNodeParameter('startFrom', 'now') as StartFrom;
		const startId = Math.max(0, Math.floor(Number(this.getNodeParameter('startId', 0)) || 0));
		const key = queryKey(startFrom, startId, connection.baseUrl);
		const staticData = this.getWorkflowStaticData('node');
		const stored = readState(staticData, key);
		const deadline = pollDeadline(this);
		// What identifies the trigger, whatever state object n8n handed this poll.
		const node = this.getNode();
		const trigger = `${this.getWorkflow().id ?? ''}|${node.id}|${node.name}|${key}`;
		const turn = await takeTurn(trigger, stored?.rev, deadline);
		if (typeof turn === 'string') return null; // another poll ran, or its delivery is not committed yet
		try {
			/** Stores the state unless another poll took this trigger over meanwhile. */
			const commit = (state: CursorState): boolean => {
				if (!turn.holds()) return false;
				if (!stored || !sameState(state, stored)) writeState(staticData, state);
				return true;
			};

			if (!stored && startFrom === 'now') {
				// First activation: remember where "now" is; O(log max id) requests, nothing emitted.
				const { newest, overlap } = await newestPublication(this, connection, deadline);
				if (!newest) {
					commit(initialState(key, 0));
					return null;
				}
				const since = baselineSince(newest.id, overlap);
				const page = await listPage(this, connection, since, PAGE_LIMIT);
				commit(baselineState(key, since, page));
				return null;
			}

			// Pages and their manifests in turn, until the deadline: what is complete is delivered.
			const run = startPoll(stored ?? initialState(key, startFrom === 'id' ? startId : 0));
			const details: IDataObject[] = [];
			const read = async () => {
				for (let pages = 0; pages < MAX_PAGES_PER_POLL; pages++) {
					if (pages > 0 && Date.now() > deadline) return;
					const page = await listPage(this, connection, run.nextSince, PAGE_LIMIT);
					const step = addPage(run, page);
					if (includeManifest) {
						const fresh = freshRecords(run);
						await fetchManifests(this, connection, fresh.slice(details.length), deadline, details);
						if (details.length < fresh.length) return;
					}
					if (step.next === null) return;
				}
			};
			// Torn down by n8n: what is complete is still delivered (n8n starts an execution from it).
			const torn = await read().then(
				() => undefined,
				(error: unknown) => {
					if (isPollTeardown(error)) return error;
					throw error;
				},
			);

			const fresh = freshRecords(run);
			const delivered = includeManifest ? fresh.slice(0, details.length) : fresh;
			if (torn !== undefined && delivered.length === 0) throw pollTeardownError(node, torn);
			const next = finishPoll(run, delivered.length);
			if (!commit(next)) return null; // taken over after running far too long: discarded
			if (delivered.length === 0) return null;
			turn.delivered(next.rev);
			return [delivered.map((record, index) => toItem(record, details[index]))];
		} finally {
			turn.release();
		}
	}
}
