import type { ILoadOptionsFunctions, INodeListSearchResult } from 'n8n-workflow';

import { type ListPage, type PublicationRecord, newestFirstPage } from '../shared/publications';
import { getConnection, listPublications } from '../transport';

/** Records one picker page shows. */
export const PICKER_PAGE_SIZE = 50;

/** `YYYY-MM-DD HH:MM UTC`, or '' when the record has no valid time. */
function publishedAt(record: PublicationRecord): string {
	const ms = record.published_at;
	if (typeof ms !== 'number' || !Number.isFinite(ms)) return '';
	const iso = new Date(ms).toISOString();
	return `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
}

/** How the picker names a record: everything a person may recognise it by. */
function pickerLabel(record: PublicationRecord): string {
	const parts = [`#${record.id}`, `${record.pack_id} v${record.version}`];
	if (typeof record.style_code === 'string' && record.style_code) parts.push(record.style_code);
	const date = publishedAt(record);
	if (date) parts.push(date);
	return parts.join(' · ');
}

/**
 * A filter matches when every word of it occurs (case-insensitive) in the record's label: id, pack,
 * version, style code, date.
 */
function matcher(filter: string | undefined): (record: PublicationRecord) => boolean {
	const words = (filter ?? '').toLowerCase().split(/\s+/).filter(Boolean);
	return (record) => {
		const label = pickerLabel(record).toLowerCase();
		return words.every((word) => label.includes(word));
	};
}

/**
 * "From list" of Get Publication's Publication parameter: the account's publications newest first,
 * named by id, pack, version, style code and date, searchable by any of them (a search for a number
 * also finds the publication with exactly that id). Paged: see newestFirstPage.
 */
export async function searchPublications(
	this: ILoadOptionsFunctions,
	filter?: string,
	paginationToken?: string,
): Promise<INodeListSearchResult> {
	const connection = await getConnection(this);
	const list = async (since: number, limit: number): Promise<ListPage> =>
		(await listPublications(this, connection, { sinceId: since, limit })).body;
	const page = await newestFirstPage(list, {
		pageSize: PICKER_PAGE_SIZE,
		token: paginationToken,
		matches: matcher(filter),
	});
	const records = page.records;
	const wanted = filter?.trim().replace(/^#/, '') ?? '';
	if (!paginationToken && /^\d{1,15}$/.test(wanted) && Number(wanted) > 0) {
		const id = Number(wanted);
		// The first record above id - 1 is the one with this id, if the account has it.
		const exact = records.some((record) => record.id === id)
			? undefined
			: (await list(id - 1, 1)).items?.find((record) => record.id === id);
		if (exact) records.unshift(exact);
	}
	return {
		results: records.map((record) => ({ name: pickerLabel(record), value: String(record.id) })),
		paginationToken: page.next,
	};
}
