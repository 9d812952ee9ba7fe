/** Max File Size: the per-file cap of every operation that downloads (Generate, Get Publication, Download File). */
import type { INodeProperties } from 'n8n-workflow';

import { boundedNumber } from '../shared/parameters';

const MIB = 1024 * 1024;

/** The default is the transport's DEFAULT_MAX_FILE_BYTES in MB (a unit test holds them equal). */
export const maxFileSizeOption: INodeProperties = {
	displayName: 'Max File Size (MB)',
	name: 'maxFileSizeMb',
	type: 'number',
	typeOptions: { minValue: 1, maxValue: 1024 },
	default: 200,
	description: 'A downloaded file larger than this is stopped and reported as an error',
};

/** The checked Max File Size of an options collection, in bytes. */
export function maxFileBytes(options: unknown): number {
	const value = (options as { maxFileSizeMb?: unknown } | null | undefined)?.maxFileSizeMb;
	return Math.floor(boundedNumber(maxFileSizeOption, value) * MIB);
}
