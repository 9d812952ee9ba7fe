import type { INodeProperties } from 'n8n-workflow';

import * as download from './download.operation';

export { download };

export const description: INodeProperties[] = [
	{
		displayName: 'Operation',
		name: 'operation',
		type: 'options',
		noDataExpression: true,
		default: 'download',
		displayOptions: { show: { resource: ['file'] } },
		options: [
			{
				name: 'Download',
				value: 'download',
				action: 'Download a file',
				description: 'Download a generated or published image as binary data',
			},
		],
	},
	...download.description,
];
