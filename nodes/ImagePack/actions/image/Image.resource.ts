import type { INodeProperties } from 'n8n-workflow';

import * as generate from './generate.operation';

export { generate };

export const description: INodeProperties[] = [
	{
		displayName: 'Operation',
		name: 'operation',
		type: 'options',
		noDataExpression: true,
		default: 'generate',
		displayOptions: { show: { resource: ['image'] } },
		options: [
			{
				name: 'Generate',
				value: 'generate',
				action: 'Generate product images',
				description:
					'Generate e-commerce images from a prompt and/or reference image IDs; returns image IDs, file URLs and credits charged, with the images attached',
			},
		],
	},
	...generate.description,
];
