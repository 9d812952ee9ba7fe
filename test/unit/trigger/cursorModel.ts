/**
 * A model of the publication list (`GET /api/v1/image-pack-publications`: ids above `since_id`,
 * ascending, with `next_since_id` and `reread_overlap`) and a driver that polls it the way the
 * trigger does, for the pure cursor tests: global ids, several accounts, out-of-order commits within
 * the contract's overlap, the same publication listed under more than one id.
 */
import {
	DEFAULT_OVERLAP,
	PAGE_LIMIT,
	type ListPage,
	type PublicationRecord,
} from '../../../nodes/ImagePack/shared/publications';
import {
	addPage,
	deliverable,
	finishBaseline,
	finishPoll,
	startBaseline,
	startPoll,
} from '../../../nodes/ImagePack/trigger/cursor';
import {
	type CursorState,
	decodeRuns,
	initialState,
	readState,
} from '../../../nodes/ImagePack/trigger/state';

export function upperBound(list: PublicationRecord[], id: number): number {
	let lo = 0;
	let hi = list.length;
	while (lo < hi) {
		const mid = (lo + hi) >> 1;
		if (list[mid].id <= id) lo = mid + 1;
		else hi = mid;
	}
	return lo;
}

export const rec = (id: number, pack = `pk_${id}`, version = 1): PublicationRecord => ({
	id,
	pack_id: pack,
	version,
});

type Owned = PublicationRecord & { account: string };

/**
 * An in-memory model of the publication list: global ids, commits possibly out of order,
 * and the same publication (pack_id, version) listed again under a later id.
 */
export class Model {
	nextId = 1;
	readonly all = new Map<number, Owned>();
	readonly pending = new Map<number, Owned>();
	readonly byAccount = new Map<string, PublicationRecord[]>();
	readonly versions = new Map<string, number>();
	maxVisible = 0;
	requests = 0;

	constructor(readonly overlap = DEFAULT_OVERLAP) {}

	allocate(account: string, pack?: string): number {
		const packId = pack ?? `pk_${account}_${this.nextId}`;
		const version = (this.versions.get(packId) ?? 0) + 1;
		this.versions.set(packId, version);
		return this.add({ id: this.nextId++, pack_id: packId, version, account });
	}

	/** The publication `id` again, under the next id of the sequence (pending until committed). */
	duplicate(id: number): number {
		const { pack_id, version, account } = this.all.get(id)!;
		return this.add({ id: this.nextId++, pack_id, version, account });
	}

	private add(record: Owned): number {
		this.all.set(record.id, record);
		this.pending.set(record.id, record);
		return record.id;
	}

	/**
	 * Makes `id` visible. Keeps the contract: every id still pending stays within `overlap` of the
	 * newest visible id, so older pending ids that would fall out are committed first.
	 */
	commit(id: number): void {
		const limit = Math.max(this.maxVisible, id) - this.overlap;
		for (const other of [...this.pending.keys()]) {
			if (other !== id && other <= limit) this.reveal(other);
		}
		this.reveal(id);
	}

	commitAll(): void {
		for (const id of [...this.pending.keys()].sort((a, b) => a - b)) this.commit(id);
	}

	private reveal(id: number): void {
		const record = this.pending.get(id);
		if (!record) return;
		this.pending.delete(id);
		const { account, ...publication } = record;
		const list = this.byAccount.get(account) ?? [];
		this.byAccount.set(account, list);
		list.splice(upperBound(list, id), 0, publication);
		this.maxVisible = Math.max(this.maxVisible, id);
	}

	list(account: string, since: number, limit: number): ListPage {
		this.requests++;
		const list = this.byAccount.get(account) ?? [];
		const from = upperBound(list, since);
		const items = list.slice(from, from + limit);
		return {
			items,
			next_since_id: items.length ? items[items.length - 1].id : since,
			reread_overlap: this.overlap,
		};
	}

	visibleOf(account: string): PublicationRecord[] {
		return this.byAccount.get(account) ?? [];
	}

	/** Test-only: makes `id` visible without the contract's ordering (to show its limit). */
	forceVisible(id: number): void {
		this.reveal(id);
	}
}

export interface Driver {
	state: CursorState;
	emitted: PublicationRecord[];
	batches: PublicationRecord[][];
}

export const newDriver = (state = initialState('q', 0)): Driver => ({
	state,
	emitted: [],
	batches: [],
});

/**
 * One poll as the node runs it: page while full, at most `maxPages`, until `emitLimit` fresh records
 * are read (Max Publications per Poll), then deliver `emitLimit` of them.
 */
export function poll(
	model: Model,
	account: string,
	driver: Driver,
	maxPages = 50,
	emitLimit?: number,
	between?: () => void,
	pageLimit = PAGE_LIMIT,
) {
	const run = startPoll(driver.state);
	for (let pages = 0; pages < maxPages; pages++) {
		if (pages > 0) between?.();
		if (addPage(run, model.list(account, run.nextSince, pageLimit), pageLimit) === null) break;
		if (run.late !== undefined) break; // committed between two pages: delivered below it
		if (emitLimit !== undefined && run.fresh.length >= emitLimit) break; // Max Publications per Poll
	}
	const fresh = run.fresh;
	const count = deliverable(run, emitLimit);
	driver.state = finishPoll(run, count);
	const batch = fresh.slice(0, count);
	if (batch.length) driver.batches.push(batch);
	driver.emitted.push(...batch);
	return batch;
}

/** A restart: the state as n8n stores and loads it. */
export const restart = (driver: Driver) => {
	driver.state = readState(JSON.parse(JSON.stringify(driver.state)), driver.state.queryKey)!;
};

export const keyOf = (r: PublicationRecord) => `${r.pack_id}@${r.version}`;

/** What breaks "every visible publication, by (pack_id, version), exactly once, batches ascending". */
export function exactlyOnceProblems(model: Model, account: string, driver: Driver) {
	const visible = model.visibleOf(account);
	const visibleIds = new Set(visible.map((r) => r.id));
	const once = new Set<string>();
	const problems: string[] = [];
	for (const record of driver.emitted) {
		const key = keyOf(record);
		if (once.has(key)) problems.push(`${key} delivered again as id ${record.id}`);
		if (!visibleIds.has(record.id)) problems.push(`id ${record.id} is not visible`);
		once.add(key);
	}
	for (const record of visible) {
		if (!once.has(keyOf(record)))
			problems.push(`${keyOf(record)} (id ${record.id}) never delivered`);
	}
	for (const batch of driver.batches) {
		const ids = batch.map((r) => r.id);
		if (ids.some((id, at) => at > 0 && id < ids[at - 1]))
			problems.push(`batch not ascending: ${ids}`);
	}
	return problems;
}

export function expectExactlyOnce(model: Model, account: string, driver: Driver) {
	expect(exactlyOnceProblems(model, account, driver)).toEqual([]);
}

/** One poll over `pages`, each the answer to the run's next request: the run and what was fresh. */
export function readPages(state: CursorState, pages: ListPage[], limit = PAGE_LIMIT) {
	const run = startPoll(state);
	let next: number | null = null;
	for (const page of pages) next = addPage(run, page, limit);
	return { run, fresh: run.fresh, next };
}

/** The "now" baseline's state from the answers to its requests, as the trigger reads them. */
export function baselineState(
	queryKey: string,
	since: number,
	pages: ListPage | ListPage[],
	limit = PAGE_LIMIT,
	head = since,
): CursorState {
	const run = startBaseline(queryKey, since, head);
	for (const page of Array.isArray(pages) ? pages : [pages]) addPage(run, page, limit);
	return finishBaseline(run);
}

export const size = (state: CursorState) => Buffer.byteLength(JSON.stringify(state));

/** The ids a state records as handled above its start. */
export const handledIds = (state: { start: number; handled: string }) =>
	decodeRuns(state.start, state.handled);
