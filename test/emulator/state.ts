/**
 * All mutable state of one emulator: accounts, keys, sessions, turns, images, publications, the credit
 * ledger, the clock and the test knobs (faults, latency, rate limit, scripted generation outcomes).
 * Lookups the public API does per request are maps or binary searches, so 100k publications stay fast.
 */
import { createHash, createHmac, randomBytes } from 'crypto';

import type { ModelId, Quality, Ratio, RequestedModel, Resolution } from './catalog';
import { dimensions } from './catalog';
import { ApiError } from './errors';

export const DAY_MS = 24 * 60 * 60 * 1000;
export const SIGNED_LINK_TTL_MS = 60 * 60 * 1000;
export const NEW_ACCOUNT_AGE_MS = 7 * DAY_MS;
export const NEW_ACCOUNT_DAILY_LIMIT = 2000;
/** Records published before this instant (2026-09-10) carry schemaVersion 2, as the API states. */
export const SCHEMA_V3_FROM = Date.UTC(2026, 8, 10);
export const ALL_SCOPES = ['generate:write', 'assets:read', 'documents:read'];

export type RouteName = 'generate' | 'listPublications' | 'getPublication' | 'file' | 'signedFile';
export const ROUTE_NAMES: readonly RouteName[] = [
	'generate',
	'listPublications',
	'getPublication',
	'file',
	'signedFile',
];

export interface Account {
	id: string;
	credits: number;
	createdAt: number;
}

export interface ApiKeyRecord {
	key: string;
	accountId: string;
	name: string;
	scopes: string[];
	expiresAt: number | null;
	revoked: boolean;
	createdAt: number;
}

export interface ImageRecord {
	id: string;
	accountId: string;
	filename: string;
	width: number;
	height: number;
	turnId: string | null;
	createdAt: number;
	/** Deleted by hand on the website: refs fail, files 404, manifests show download_url null. */
	deleted: boolean;
	/** Removed by retention clean-up: refs fail, files 404. Never happens to published images. */
	cleaned: boolean;
	/** Referenced by a publication: protected from clean-up. */
	published: boolean;
	/** What the picture shows besides its size (generated images: the model and the prompt). */
	caption?: { model?: string; prompt?: string };
}

export interface SessionRecord {
	id: string;
	accountId: string;
	title: string;
	createdAt: number;
	turnIds: string[];
}

export interface TurnRecord {
	id: string;
	accountId: string;
	sessionId: string;
	requestedModel: RequestedModel;
	/** The model actually used (what `auto` chose); never in the public response. */
	model: ModelId;
	ratio: Ratio;
	resolution: Resolution;
	quality: Quality | null;
	n: number;
	purposeId: string;
	prompt: string | null;
	refImageIds: string[];
	pricePerImage: number;
	reserved: number;
	charged: number;
	delivered: number;
	status: 'running' | 'succeeded' | 'partial' | 'failed';
	imageIds: string[];
	warnings: Warning[];
	createdAt: number;
	durationMs: number | null;
}

export interface Warning {
	type: 'unsupported' | 'downgraded';
	feature: string;
	details: string;
}

export type LedgerType = 'initial' | 'adjust' | 'reserve' | 'charge' | 'refund';

export interface LedgerEntry {
	type: LedgerType;
	/** Credits moved (always >= 0; `adjust` may be negative). `charge` confirms part of a reserve and does not move the balance. */
	amount: number;
	balanceAfter: number;
	turnId: string | null;
	at: number;
}

export interface PublicationRecord {
	id: number;
	accountId: string;
	pack_id: string;
	version: number;
	style_code: string;
	source_revision: number;
	published_at: number;
	/** Frozen document snapshot without download_url (added when served). */
	manifest: Readonly<Record<string, unknown>>;
	committed: boolean;
}

interface PackRecord {
	id: string;
	accountId: string;
	versions: number;
	sourceRevision: number;
	styleCode: string;
}

export interface FaultSpec {
	route: RouteName | '*';
	kind: 'status' | 'reset' | 'slow' | 'truncate' | 'malformedJson' | 'html' | 'hold';
	count?: number;
	/** Matching requests to let pass untouched before the fault applies (skip 3 aims at the 4th). */
	skip?: number;
	status?: number;
	code?: string;
	message?: string;
	retryAfter?: number;
	delayMs?: number;
	when?: 'before' | 'after';
	/** html: include X-Request-Id (default false: the page comes from a proxy, not the service). */
	withRequestId?: boolean;
	/** Only requests whose JSON body has a `prompt` containing this text (one item of a batch). */
	promptIncludes?: string;
}

export interface Fault extends Required<Pick<FaultSpec, 'route' | 'kind' | 'when'>> {
	id: number;
	remaining: number;
	/** Matching requests still to let pass before the fault applies. */
	skip: number;
	spec: FaultSpec;
}

/**
 * A request held by a `hold` fault: before the work (nothing validated, reserved or charged yet) or
 * after it (done and charged, the response not sent), until released or until the client goes away.
 */
export interface HeldRequest {
	/** The request-log entry's seq. */
	seq: number;
	faultId: number;
	route: RouteName;
	prompt: string | null;
	when: 'before' | 'after';
	/** Emulator time the hold began. */
	since: number;
}

/** How a held request ended: released by the control API, its client went away, or dropped by reset/close. */
export type HeldOutcome = 'waiting' | 'released' | 'clientClosed' | 'dropped';

export interface GenerationBehaviour {
	/** Images actually produced (0 = whole run fails). Clamped to n. */
	deliver?: number;
	/** Whole run fails: full refund and 500 internal_error. */
	fail?: boolean;
	/** Deliver at another ratio/resolution than requested (gives downgraded warnings). */
	downgrade?: { ratio?: Ratio; resolution?: Resolution };
	/** Extra warnings to add verbatim (details optional). */
	warnings?: Array<{ type: 'unsupported' | 'downgraded'; feature: string; details?: string }>;
	/** Extra generation time in ms (on top of the generate latency). */
	durationMs?: number;
	/** Applies to the next `count` generations that pass validation (default 1). */
	count?: number;
	/** Applies until cleared (overrides count). */
	persist?: boolean;
	/** Only generations whose prompt contains this text (one item of a batch); others pass by. */
	promptIncludes?: string;
}

export interface RateLimit {
	perKeyPerMinute: number | null;
}

export interface RequestLogEntry {
	seq: number;
	listener: 'api' | 'files';
	route: RouteName | 'unknown';
	method: string;
	path: string;
	query: Record<string, string>;
	/** Lower-case names, values as sent (authorization included). */
	headers: Record<string, string>;
	/** null when the connection was reset before a status line was sent. */
	status: number | null;
	accountId: string | null;
	requestId: string;
	fault: string | null;
	/** The `prompt` of a JSON body (generate), so a test can count the requests of each item. */
	prompt: string | null;
	/** Set when a `hold` fault held the request: when, and how the hold ended so far. */
	held: { when: 'before' | 'after'; outcome: HeldOutcome } | null;
	at: number;
}

export interface StateOptions {
	defaultCredits: number;
	apiKey: string;
	accountId: string;
	/** Newest request-log entries kept (default 100,000). */
	requestLogLimit: number;
}

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

/** Index of the first element with id > target in an ascending array. */
function upperBound(records: PublicationRecord[], target: number): number {
	let lo = 0;
	let hi = records.length;
	while (lo < hi) {
		const mid = (lo + hi) >>> 1;
		if (records[mid].id <= target) lo = mid + 1;
		else hi = mid;
	}
	return lo;
}

export class EmulatorState {
	readonly accounts = new Map<string, Account>();
	readonly keys = new Map<string, ApiKeyRecord>();
	readonly sessions = new Map<string, SessionRecord>();
	readonly turns = new Map<string, TurnRecord>();
	readonly images = new Map<string, ImageRecord>();
	/** accountId → filename → image. */
	readonly filesByAccount = new Map<string, Map<string, ImageRecord>>();
	readonly ledgers = new Map<string, LedgerEntry[]>();
	/** Every allocated publication id (committed or not). */
	readonly publications = new Map<number, PublicationRecord>();
	/** accountId → committed publications, ascending id. */
	readonly visible = new Map<string, PublicationRecord[]>();
	readonly packs = new Map<string, PackRecord>();
	nextPublicationId = 1;
	private packCounter = 0;

	clockOffsetMs = 0;
	readonly faults: Fault[] = [];
	private faultCounter = 0;
	readonly latency = new Map<RouteName | '*', number>();
	behaviour: (GenerationBehaviour & { remaining: number }) | null = null;
	rateLimit: RateLimit = { perKeyPerMinute: null };
	/** The reread_overlap the publication list announces (the API's shown responses say 50). */
	rereadOverlap = 50;
	private readonly keyHits = new Map<string, number[]>();
	readonly requestLog: RequestLogEntry[] = [];
	/** Requests held by `hold` faults right now, by log seq; settle(true) lets one go on. */
	private readonly heldRequests = new Map<number, { view: HeldRequest; entry: RequestLogEntry; settle: (go: boolean) => void }>();
	private requestSeq = 0;
	/** Secret for signed file links; new per state so old links die on reset. */
	readonly signingSecret = hex(32);

	constructor(readonly options: StateOptions) {
		const account = this.createAccount({ credits: options.defaultCredits, ageDays: 365, id: options.accountId });
		this.createKey({ accountId: account.id, key: options.apiKey, name: 'default' });
	}

	now(): number {
		return Date.now() + this.clockOffsetMs;
	}

	// ---- accounts and keys -------------------------------------------------------------------------

	createAccount(opts: { credits?: number; ageDays?: number; id?: string }): Account {
		const id = opts.id ?? `acc_${hex(6)}`;
		if (this.accounts.has(id)) throw new ApiError(409, 'conflict', `account ${id} exists`);
		const account: Account = {
			id,
			credits: opts.credits ?? 1_000_000,
			createdAt: this.now() - (opts.ageDays ?? 30) * DAY_MS,
		};
		this.accounts.set(id, account);
		this.filesByAccount.set(id, new Map());
		this.visible.set(id, []);
		this.ledgers.set(id, []);
		this.ledger(account, 'initial', account.credits, null, false);
		return account;
	}

	account(id: string | undefined): Account {
		const account = this.accounts.get(id ?? this.options.accountId);
		if (!account) throw new ApiError(404, 'not_found', `unknown account ${id}`);
		return account;
	}

	accountView(account: Account) {
		const now = this.now();
		return {
			accountId: account.id,
			credits: account.credits,
			createdAt: account.createdAt,
			ageDays: (now - account.createdAt) / DAY_MS,
			isNew: this.isNewAccount(account),
			spentLast24h: this.spentLast24h(account),
		};
	}

	isNewAccount(account: Account): boolean {
		return this.now() - account.createdAt < NEW_ACCOUNT_AGE_MS;
	}

	/** Credits spent (charged, or still reserved by running turns) in the rolling 24 hours. */
	spentLast24h(account: Account): number {
		const since = this.now() - DAY_MS;
		let spent = 0;
		for (const turn of this.turns.values()) {
			if (turn.accountId === account.id && turn.createdAt > since) {
				spent += turn.status === 'running' ? turn.reserved : turn.charged;
			}
		}
		return spent;
	}

	setCredits(account: Account, credits: number) {
		const delta = credits - account.credits;
		account.credits = credits;
		this.ledger(account, 'adjust', delta, null, false);
	}

	ledger(account: Account, type: LedgerType, amount: number, turnId: string | null, moveBalance = true) {
		if (moveBalance) account.credits += type === 'reserve' ? -amount : type === 'refund' ? amount : 0;
		this.ledgers.get(account.id)!.push({ type, amount, balanceAfter: account.credits, turnId, at: this.now() });
	}

	createKey(opts: {
		accountId?: string;
		scopes?: string[];
		expiresAt?: number | null;
		key?: string;
		name?: string;
	}): ApiKeyRecord {
		const account = this.account(opts.accountId);
		const record: ApiKeyRecord = {
			key: opts.key ?? `sk_${hex(24)}`,
			accountId: account.id,
			name: opts.name ?? 'test key',
			scopes: [...(opts.scopes ?? ALL_SCOPES)],
			expiresAt: opts.expiresAt ?? null,
			revoked: false,
			createdAt: this.now(),
		};
		this.keys.set(record.key, record);
		return record;
	}

	revokeKey(key: string) {
		const record = this.keys.get(key);
		if (!record) throw new ApiError(404, 'not_found', 'unknown key');
		record.revoked = true;
	}

	/** Sliding one-minute window per key; returns seconds to wait when over the limit. */
	rateLimitRetryAfter(key: string): number | null {
		const limit = this.rateLimit.perKeyPerMinute;
		if (limit === null || limit === undefined) return null;
		const now = this.now();
		const hits = (this.keyHits.get(key) ?? []).filter((t) => t > now - 60_000);
		this.keyHits.set(key, hits);
		if (hits.length >= limit) return Math.max(1, Math.ceil((hits[0] + 60_000 - now) / 1000));
		hits.push(now);
		return null;
	}

	// ---- sessions, turns, images --------------------------------------------------------------------

	createSession(accountId: string, title: string): SessionRecord {
		const session: SessionRecord = { id: `s_${hex(8)}`, accountId, title, createdAt: this.now(), turnIds: [] };
		this.sessions.set(session.id, session);
		return session;
	}

	addImage(
		accountId: string,
		width: number,
		height: number,
		turnId: string | null,
		id?: string,
		caption?: ImageRecord['caption'],
	): ImageRecord {
		const imageId = id ?? `img_${hex(8)}`;
		if (this.images.has(imageId)) throw new ApiError(409, 'conflict', `image ${imageId} exists`);
		const image: ImageRecord = {
			id: imageId,
			accountId,
			filename: `${imageId.replace(/^img_/, '')}_${hex(4)}.png`,
			width,
			height,
			turnId,
			createdAt: this.now(),
			deleted: false,
			cleaned: false,
			published: false,
			caption,
		};
		this.images.set(image.id, image);
		this.filesByAccount.get(accountId)!.set(image.filename, image);
		return image;
	}

	seedImages(accountId: string, count: number, ratio: Ratio = '1:1', resolution: Resolution = '1K') {
		const { width, height } = dimensions(ratio, resolution);
		return Array.from({ length: count }, () => this.addImage(accountId, width, height, null));
	}

	/** Finds an image of the account by id or filename (control API convenience). */
	findImage(accountId: string, idOrFilename: string): ImageRecord {
		const image = this.images.get(idOrFilename) ?? this.filesByAccount.get(accountId)?.get(idOrFilename);
		if (!image || image.accountId !== accountId) {
			throw new ApiError(404, 'not_found', `no image ${idOrFilename} in account ${accountId}`);
		}
		return image;
	}

	isAvailable(image: ImageRecord | undefined): image is ImageRecord {
		return !!image && !image.deleted && !image.cleaned;
	}

	signFile(accountId: string, filename: string, expires: number): string {
		return createHmac('sha256', this.signingSecret).update(`${accountId}\n${filename}\n${expires}`).digest('hex');
	}

	// ---- publications -------------------------------------------------------------------------------

	private newPack(accountId: string): PackRecord {
		this.packCounter++;
		const pack: PackRecord = {
			id: `pk_${String(this.packCounter).padStart(8, '0')}`,
			accountId,
			versions: 0,
			sourceRevision: 0,
			styleCode: `ST-${String(1000 + (this.packCounter % 9000))}`,
		};
		this.packs.set(pack.id, pack);
		return pack;
	}

	pack(accountId: string, packId: string | undefined): PackRecord {
		if (packId === undefined) return this.newPack(accountId);
		let pack = this.packs.get(packId);
		if (!pack) {
			// A test-chosen pack id: create it on first use.
			pack = { id: packId, accountId, versions: 0, sourceRevision: 0, styleCode: `ST-${1000 + (this.packs.size % 9000)}` };
			this.packs.set(packId, pack);
		}
		if (pack.accountId !== accountId) {
			throw new ApiError(400, 'invalid_request', `pack ${packId} belongs to another account`);
		}
		return pack;
	}

	/** Allocates the next id of the global sequence and a new version of the pack. */
	allocatePublication(
		accountId: string,
		pack: PackRecord,
		manifest: Readonly<Record<string, unknown>>,
		fields: { styleCode?: string; sourceRevision?: number; publishedAt?: number },
		commit: boolean,
	): PublicationRecord {
		pack.versions += 1;
		pack.sourceRevision = fields.sourceRevision ?? pack.sourceRevision + 1 + (pack.versions % 3);
		if (fields.styleCode !== undefined) pack.styleCode = fields.styleCode;
		const record: PublicationRecord = {
			id: this.nextPublicationId++,
			accountId,
			pack_id: pack.id,
			version: pack.versions,
			style_code: pack.styleCode,
			source_revision: pack.sourceRevision,
			published_at: fields.publishedAt ?? this.now(),
			manifest,
			committed: false,
		};
		this.publications.set(record.id, record);
		if (commit) this.commit(record.id);
		return record;
	}

	/**
	 * The same publication (pack_id, version, fields, frozen manifest) listed again under the next id
	 * of the sequence: the API tells clients to deduplicate by (pack_id, version), not by id.
	 */
	repeatPublication(id: number, commit: boolean): PublicationRecord {
		const original = this.publications.get(id);
		if (!original) throw new ApiError(404, 'not_found', `no publication ${id}`);
		const record: PublicationRecord = { ...original, id: this.nextPublicationId++, committed: false };
		this.publications.set(record.id, record);
		if (commit) this.commit(record.id);
		return record;
	}

	commit(id: number): PublicationRecord {
		const record = this.publications.get(id);
		if (!record) throw new ApiError(404, 'not_found', `no publication ${id}`);
		if (record.committed) return record;
		record.committed = true;
		const list = this.visible.get(record.accountId)!;
		if (list.length === 0 || list[list.length - 1].id < id) list.push(record);
		else list.splice(upperBound(list, id), 0, record); // a late commit of a smaller id
		return record;
	}

	listPublications(accountId: string, sinceId: number, limit: number): PublicationRecord[] {
		const list = this.visible.get(accountId) ?? [];
		const start = upperBound(list, sinceId);
		return list.slice(start, start + limit);
	}

	visiblePublication(accountId: string, id: number): PublicationRecord | undefined {
		const record = this.publications.get(id);
		return record && record.committed && record.accountId === accountId ? record : undefined;
	}

	// ---- test knobs ---------------------------------------------------------------------------------

	addFault(spec: FaultSpec): Fault {
		const inherentlyAfter = spec.kind === 'truncate' || spec.kind === 'malformedJson' || spec.kind === 'slow';
		const fault: Fault = {
			id: ++this.faultCounter,
			route: spec.route,
			kind: spec.kind,
			when: spec.when ?? (inherentlyAfter ? 'after' : 'before'),
			remaining: spec.count ?? 1,
			skip: spec.skip ?? 0,
			spec,
		};
		this.faults.push(fault);
		return fault;
	}

	takeFault(route: RouteName, prompt?: string): Fault | undefined {
		const matches = (f: Fault) =>
			(f.route === route || f.route === '*') && f.remaining > 0 && promptMatches(f.spec.promptIncludes, prompt);
		// A fault still skipping counts this request and lets it look further down the queue.
		let index = -1;
		for (let i = 0; i < this.faults.length && index < 0; i++) {
			const f = this.faults[i];
			if (!matches(f)) continue;
			if (f.skip > 0) f.skip -= 1;
			else index = i;
		}
		if (index < 0) return undefined;
		const fault = this.faults[index];
		fault.remaining -= 1;
		if (fault.remaining <= 0) this.faults.splice(index, 1);
		return fault;
	}

	/**
	 * Holds a request until release(seq) (resolves true), its client goes away or drop() (false).
	 * `onClose` registers the client-gone callback (the response's close event).
	 */
	hold(entry: RequestLogEntry, fault: Fault, signal: AbortSignal, onClose: (callback: () => void) => void): Promise<boolean> {
		const view: HeldRequest = {
			seq: entry.seq,
			faultId: fault.id,
			route: entry.route as RouteName,
			prompt: entry.prompt,
			when: fault.when,
			since: this.now(),
		};
		entry.held = { when: fault.when, outcome: 'waiting' };
		return new Promise<boolean>((resolve) => {
			const end = (outcome: HeldOutcome) => {
				if (!this.heldRequests.delete(entry.seq)) return;
				entry.held = { when: fault.when, outcome };
				resolve(outcome === 'released');
			};
			this.heldRequests.set(entry.seq, { view, entry, settle: (go) => end(go ? 'released' : 'dropped') });
			onClose(() => end('clientClosed'));
			if (signal.aborted) end('dropped');
			else signal.addEventListener('abort', () => end('dropped'), { once: true });
		});
	}

	/** The requests held right now, oldest first. */
	held(): HeldRequest[] {
		return [...this.heldRequests.values()].map((h) => h.view);
	}

	/** Lets the held request with this log seq go on (every held request when seq is omitted). */
	release(seq?: number): HeldRequest[] {
		const chosen = [...this.heldRequests.values()].filter((h) => seq === undefined || h.view.seq === seq);
		if (seq !== undefined && !chosen.length) throw new ApiError(404, 'not_found', `no held request ${seq}`);
		for (const h of chosen) h.settle(true);
		return chosen.map((h) => h.view);
	}

	/** Ends every hold without letting the requests go on (reset): their connections are dropped. */
	dropHeld() {
		for (const h of [...this.heldRequests.values()]) h.settle(false);
	}

	latencyFor(route: RouteName): number {
		return this.latency.get(route) ?? this.latency.get('*') ?? 0;
	}

	takeBehaviour(prompt?: string): GenerationBehaviour | undefined {
		const behaviour = this.behaviour;
		if (!behaviour || !promptMatches(behaviour.promptIncludes, prompt)) return undefined;
		if (!behaviour.persist) {
			behaviour.remaining -= 1;
			if (behaviour.remaining <= 0) this.behaviour = null;
		}
		return behaviour;
	}

	logRequest(entry: Omit<RequestLogEntry, 'seq' | 'at' | 'status' | 'accountId' | 'fault' | 'prompt' | 'held'>): RequestLogEntry {
		const full: RequestLogEntry = {
			seq: ++this.requestSeq,
			...entry,
			status: null,
			accountId: null,
			fault: null,
			prompt: null,
			held: null,
			at: this.now(),
		};
		this.requestLog.push(full);
		// Long benchmark runs must not grow memory without bound: keep the newest entries.
		const limit = this.options.requestLogLimit;
		if (this.requestLog.length > limit + Math.ceil(limit / 10)) this.requestLog.splice(0, this.requestLog.length - limit);
		return full;
	}
}

/** sha256 of bytes, hex — lets tests check downloads against the control API's image list. */
export function sha256(bytes: Uint8Array): string {
	return createHash('sha256').update(bytes).digest('hex');
}

/** A fault or behaviour without `promptIncludes` applies to any request; with it, to matching prompts. */
function promptMatches(wanted: string | undefined, prompt: string | undefined): boolean {
	return wanted === undefined || (prompt ?? '').includes(wanted);
}
