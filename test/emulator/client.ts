/**
 * Typed client of the HTTP control API (/_emulator/...). One method per control route, so tests, the
 * sandbox and benchmarks script the same scenarios in process or against a separately started emulator.
 */
import { request } from 'undici';

import type { Ratio, Resolution } from './catalog';
import type {
	FaultSpec as FaultOptions,
	GenerationBehaviour,
	HeldRequest,
	LedgerEntry,
	RequestLogEntry,
	RouteName,
} from './state';

// The shapes the control API takes and returns are the emulator's own types, declared once in state.ts.
export type { Ratio, Resolution } from './catalog';
export type {
	FaultSpec as FaultOptions,
	GenerationBehaviour,
	HeldRequest,
	LedgerEntry,
	RequestLogEntry,
	RouteName,
} from './state';

export interface AccountView {
	accountId: string;
	credits: number;
	createdAt: number;
	ageDays: number;
	/** Younger than 7 days: subject to the 2000-credit 24-hour spend limit. */
	isNew: boolean;
	spentLast24h: number;
}

export interface KeyView {
	key: string;
	accountId: string;
	name: string;
	scopes: string[];
	expiresAt: number | null;
	revoked: boolean;
	createdAt: number;
}

export interface ManifestItem {
	imageId: string;
	download_url?: string | null;
	[field: string]: unknown;
}
export interface ManifestGroup {
	items?: Array<Partial<ManifestItem>>;
	[field: string]: unknown;
}

export interface PublishOptions {
	accountId?: string;
	/** Existing or new pack id (pk_...); omitted → a new pack (version 1). */
	packId?: string;
	/** Omitted → 2 when publishedAt is before 2026-09-10, else 3. */
	schemaVersion?: 2 | 3;
	/** A whole manifest; its blocks/slots are used like `blocks`/`slots` below. */
	manifest?: { schemaVersion?: number; blocks?: ManifestGroup[]; slots?: ManifestGroup[]; [field: string]: unknown };
	/** schemaVersion 3 blocks; image items without imageId (or with an unknown one) get a seeded image. */
	blocks?: ManifestGroup[];
	/** schemaVersion 2 slots. */
	slots?: ManifestGroup[];
	styleCode?: string;
	sourceRevision?: number;
	publishedAt?: number;
	/** Default true. false: the id is allocated now but stays invisible until commitPublication(id). */
	commit?: boolean;
}

export interface PublicationView {
	id: number;
	pack_id: string;
	version: number;
	style_code: string;
	source_revision: number;
	published_at: number;
	manifest: Record<string, unknown>;
	accountId: string;
	committed: boolean;
}

export interface BulkOptions {
	accountId?: string;
	count: number;
	/** Number of distinct packs cycled through (versions rise per pack); default count (all version 1). */
	packs?: number;
	schemaVersion?: 2 | 3;
	/** published_at of the first record; default now (or before 2026-09-10 for schemaVersion 2). */
	publishedAt?: number;
	/** published_at increment per record; default 0. */
	stepMs?: number;
	/** Images per manifest (schemaVersion 3), in groups of up to 10, each after a note in Chinese and English. */
	images?: number;
	/** Pads the first note to this many characters (a long seller document). */
	noteChars?: number;
}

export interface ImageView {
	id: string;
	accountId: string;
	filename: string;
	url: string;
	width: number;
	height: number;
	turnId: string | null;
	createdAt: number;
	deleted: boolean;
	cleaned: boolean;
	published: boolean;
	/** sha256 (hex) of the exact PNG bytes the signed link serves. */
	sha256: string;
}

export interface FaultView extends FaultOptions {
	id: number;
	remaining: number;
	skip: number;
}

export interface TurnView {
	id: string;
	accountId: string;
	sessionId: string;
	requestedModel: string;
	model: string;
	ratio: Ratio;
	resolution: Resolution;
	quality: string | null;
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
	warnings: Array<{ type: string; feature: string; details: string }>;
	createdAt: number;
	durationMs: number | null;
}

export interface SessionView {
	id: string;
	accountId: string;
	title: string;
	createdAt: number;
	turnIds: string[];
}

export interface EmulatorInfo {
	baseUrl: string;
	fileBaseUrl: string;
	apiKey: string;
	accountId: string;
	controlPrefix: string;
}

export class EmulatorControlError extends Error {
	constructor(
		readonly status: number,
		readonly body: unknown,
	) {
		super(`control API answered ${status}: ${JSON.stringify(body)}`);
	}
}

export class EmulatorControl {
	private readonly base: string;

	constructor(baseUrl: string) {
		this.base = `${baseUrl.replace(/\/+$/, '')}/_emulator`;
	}

	private async call<T>(method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, body?: unknown): Promise<T> {
		const res = await request(this.base + path, {
			method,
			headers: body === undefined ? {} : { 'content-type': 'application/json' },
			body: body === undefined ? undefined : JSON.stringify(body),
		});
		const text = await res.body.text();
		const parsed = text ? JSON.parse(text) : undefined;
		if (res.statusCode >= 400) throw new EmulatorControlError(res.statusCode, parsed);
		return parsed as T;
	}

	private static qs(params: Record<string, string | undefined>): string {
		const entries = Object.entries(params).filter((e): e is [string, string] => e[1] !== undefined);
		return entries.length ? `?${new URLSearchParams(entries).toString()}` : '';
	}

	/** Back to the initial state: default account and key (same value), no faults, latency, logs or clock offset. */
	reset(): Promise<EmulatorInfo> {
		return this.call('POST', '/reset');
	}
	info(): Promise<EmulatorInfo> {
		return this.call('GET', '/info');
	}

	// accounts and keys
	createAccount(options: { credits?: number; ageDays?: number; accountId?: string } = {}): Promise<AccountView> {
		return this.call('POST', '/accounts', options);
	}
	getAccount(accountId: string): Promise<AccountView> {
		return this.call('GET', `/accounts/${encodeURIComponent(accountId)}`);
	}
	updateAccount(accountId: string, patch: { credits?: number; ageDays?: number }): Promise<AccountView> {
		return this.call('PATCH', `/accounts/${encodeURIComponent(accountId)}`, patch);
	}
	setCredits(accountId: string, credits: number): Promise<AccountView> {
		return this.updateAccount(accountId, { credits });
	}
	setAccountAge(accountId: string, ageDays: number): Promise<AccountView> {
		return this.updateAccount(accountId, { ageDays });
	}
	createKey(
		options: { accountId?: string; scopes?: string[]; expiresAt?: number | null; name?: string; key?: string } = {},
	): Promise<KeyView> {
		return this.call('POST', '/keys', options);
	}
	revokeKey(key: string): Promise<KeyView> {
		return this.call('POST', '/keys/revoke', { key });
	}
	keys(accountId?: string): Promise<KeyView[]> {
		return this.call('GET', `/keys${EmulatorControl.qs({ accountId })}`);
	}

	// publications
	publish(options: PublishOptions = {}): Promise<PublicationView> {
		return this.call('POST', '/publications', options);
	}
	commitPublication(id: number): Promise<PublicationView> {
		return this.call('POST', `/publications/${id}/commit`);
	}
	/** The same publication (pack_id, version) listed again under the next id; `commit: false` keeps it pending. */
	repeatPublication(id: number, options: { commit?: boolean } = {}): Promise<PublicationView> {
		return this.call('POST', `/publications/${id}/repeat`, options);
	}
	getPublication(id: number): Promise<PublicationView> {
		return this.call('GET', `/publications/${id}`);
	}
	publishBulk(options: BulkOptions): Promise<{ firstId: number; lastId: number; count: number; packIds?: string[] }> {
		return this.call('POST', '/publications/bulk', options);
	}

	// images
	seedImages(
		options: { accountId?: string; count?: number; ratio?: Ratio; resolution?: Resolution; ids?: string[] } = {},
	): Promise<{ images: ImageView[] }> {
		return this.call('POST', '/images', options);
	}
	images(accountId?: string): Promise<ImageView[]> {
		return this.call('GET', `/images${EmulatorControl.qs({ accountId })}`);
	}
	/** Alias of images(). */
	generatedImages(accountId?: string): Promise<ImageView[]> {
		return this.images(accountId);
	}
	/** Manual delete on the website: deleteImage(image) or deleteImage(accountId, image); image = id or filename. */
	deleteImage(accountIdOrImage: string, image?: string): Promise<ImageView> {
		return this.call('POST', '/images/delete', EmulatorControl.imageArgs(accountIdOrImage, image));
	}
	/** Retention clean-up; published images are protected (`protected: true`, not cleaned). */
	cleanImage(accountIdOrImage: string, image?: string): Promise<ImageView & { protected: boolean }> {
		return this.call('POST', '/images/clean', EmulatorControl.imageArgs(accountIdOrImage, image));
	}
	private static imageArgs(a: string, b?: string) {
		return b === undefined ? { image: a } : { accountId: a, image: b };
	}

	// latency, faults, generation outcomes, rate limits
	/** ms = 0 removes the latency. */
	setLatency(route: RouteName | '*', ms: number): Promise<Record<string, number>> {
		return this.call('PUT', '/latency', { route, ms });
	}
	/** The latencies in effect, by route. */
	latency(): Promise<Record<string, number>> {
		return this.call('GET', '/latency');
	}
	injectFault(fault: FaultOptions): Promise<{ id: number; route: string; kind: string; when: string; remaining: number }> {
		return this.call('POST', '/faults', fault);
	}
	faults(): Promise<FaultView[]> {
		return this.call('GET', '/faults');
	}
	clearFaults(): Promise<void> {
		return this.call('DELETE', '/faults');
	}
	/** The requests `hold` faults hold right now, oldest first. */
	held(): Promise<HeldRequest[]> {
		return this.call('GET', '/held');
	}
	/** Lets a held request go on (by its request-log seq), or every held request; returns those released. */
	releaseHeld(seq?: number): Promise<HeldRequest[]> {
		return this.call('POST', '/held/release', seq === undefined ? {} : { seq });
	}
	setGenerationBehaviour(behaviour: GenerationBehaviour): Promise<GenerationBehaviour> {
		return this.call('PUT', '/generation-behaviour', behaviour);
	}
	clearGenerationBehaviour(): Promise<void> {
		return this.call('DELETE', '/generation-behaviour');
	}
	/** The reread_overlap the publication list announces from now on (50 after reset). */
	setRereadOverlap(overlap: number): Promise<{ overlap: number }> {
		return this.call('PUT', '/reread-overlap', { overlap });
	}
	/** perKeyPerMinute null (or omitted) turns the limit off. */
	setRateLimit(options: { perKeyPerMinute?: number | null }): Promise<{ perKeyPerMinute: number | null }> {
		return this.call('PUT', '/rate-limit', { perKeyPerMinute: options.perKeyPerMinute ?? null });
	}

	// clock
	now(): Promise<{ now: number; offsetMs: number }> {
		return this.call('GET', '/clock');
	}
	setClock(epochMs: number): Promise<{ now: number; offsetMs: number }> {
		return this.call('PUT', '/clock', { epochMs });
	}
	advanceClock(ms: number): Promise<{ now: number; offsetMs: number }> {
		return this.call('POST', '/clock/advance', { ms });
	}

	// inspection
	requests(filter: { route?: RouteName | 'unknown'; listener?: 'api' | 'files' } = {}): Promise<RequestLogEntry[]> {
		return this.call('GET', `/requests${EmulatorControl.qs(filter)}`);
	}
	clearRequests(): Promise<void> {
		return this.call('DELETE', '/requests');
	}
	ledger(accountId?: string): Promise<{ accountId: string; balance: number; entries: LedgerEntry[] }> {
		return this.call('GET', `/ledger${EmulatorControl.qs({ accountId })}`);
	}
	turns(accountId?: string): Promise<TurnView[]> {
		return this.call('GET', `/turns${EmulatorControl.qs({ accountId })}`);
	}
	sessions(accountId?: string): Promise<SessionView[]> {
		return this.call('GET', `/sessions${EmulatorControl.qs({ accountId })}`);
	}
}
