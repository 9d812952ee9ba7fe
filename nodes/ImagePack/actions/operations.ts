/**
 * The action node's resources and operations (saved workflows store these values: never renamed),
 * defined once: the router's typed map (actions/node.type.ts), each resource's Operation selector, the
 * editor's subtitle, the tool descriptions and the tool's error text all derive from it. Pure.
 */
import type { INodeProperties } from 'n8n-workflow';

export const OPERATIONS = {
	generate: {
		resource: 'image',
		name: 'Generate',
		title: 'Generate',
		action: 'Generate product images',
		description:
			'Generate e-commerce images from a prompt and/or reference image IDs; returns image IDs, file URLs and credits charged, with the images attached',
		failing: 'Image generation',
		paid: true,
	},
	get: {
		resource: 'publication',
		name: 'Get',
		title: 'Get Publication',
		action: 'Get a publication',
		description: 'Get one published image pack record with its manifest (text notes and images)',
		failing: 'Reading the publication',
	},
	getMany: {
		resource: 'publication',
		name: 'Get Many',
		title: 'Get Many Publications',
		action: 'Get many publications',
		description: 'List publication records in ascending ID order, optionally after a given ID',
		failing: 'Listing publications',
	},
	download: {
		resource: 'file',
		name: 'Download',
		title: 'Download File',
		action: 'Download a file',
		description: 'Download a generated or published image as binary data',
		failing: 'Downloading the file',
	},
} as const;

export type OperationName = keyof typeof OPERATIONS;

/** The words and facts of an operation, for any value a workflow may hold (undefined when unknown). */
export const operationOf = (operation: string) =>
	(OPERATIONS as Partial<Record<string, { failing: string; paid?: boolean }>>)[operation];

/** A resource's Operation selector: its operations in the map's order, the first the default. */
export function operationSelector(
	resource: (typeof OPERATIONS)[OperationName]['resource'],
): INodeProperties {
	const names = (Object.keys(OPERATIONS) as OperationName[]).filter(
		(operation) => OPERATIONS[operation].resource === resource,
	);
	const [first] = names;
	return {
		displayName: 'Operation',
		name: 'operation',
		type: 'options',
		noDataExpression: true,
		default: first,
		displayOptions: { show: { resource: [resource] } },
		options: names.map((value) => {
			const { name, action, description } = OPERATIONS[value];
			return { name, value, action, description };
		}),
	};
}
