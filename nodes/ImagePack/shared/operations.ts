/**
 * The action node's resources and operations (PRODUCT.md §3: saved workflows store these values),
 * defined once: the router's typed map (actions/node.type.ts), the editor's subtitle, the tool
 * descriptions and the tool's error text all derive from it. Pure.
 */
export const OPERATIONS = {
	generate: { resource: 'image', title: 'Generate', failing: 'Image generation', paid: true },
	get: { resource: 'publication', title: 'Get Publication', failing: 'Reading the publication' },
	getMany: {
		resource: 'publication',
		title: 'Get Many Publications',
		failing: 'Listing publications',
	},
	download: { resource: 'file', title: 'Download File', failing: 'Downloading the file' },
} as const;

export type OperationName = keyof typeof OPERATIONS;

/** The words and facts of an operation, for any value a workflow may hold (undefined when unknown). */
export const operationOf = (operation: string) =>
	(OPERATIONS as Partial<Record<string, { failing: string; paid?: boolean }>>)[operation];
