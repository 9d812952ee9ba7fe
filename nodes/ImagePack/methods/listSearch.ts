import type { ILoadOptionsFunctions, INodeListSearchResult } from 'n8n-workflow';

import type { ListPage } from '../shared/cursor';
import { newestFirstPage, pickerLabel } from '../shared/newestFirst';
import { getConnection, listPublications } from '../transport';

/**
 * "From list" of Get Publication's Publication parameter: the account's publications newest first,
 * named by id, pack, version, style code and date, searchable by any of them (a search for a number
 * also finds the publication with exactly that id). Paged: see shared/newestFirst.ts.
 */
export async function searchPublications(
	this: ILoadOptionsFunctions,
	filter?: string,
	paginationToken?: string,
): Promise<INodeListSearchResult> {
	const connection = await getConnection(this);
	const list = async (since: number, limit: number): Promise<ListPage> =>
		(await listPublications(this, connection, { sinceId: since, limit })).body;
	const page = await newestFirstPage(list, { token: paginationToken, filter });
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
