import type { ILoadOptionsFunctions, INodePropertyOptions } from 'n8n-workflow';

import { RATIOS, RESOLUTIONS, findModel } from '../shared/catalog';

/** The chosen model, or undefined when it is auto or an expression (then every value is offered). */
function chosenModel(ctx: ILoadOptionsFunctions) {
	const model = ctx.getCurrentNodeParameter('model');
	return typeof model === 'string' ? findModel(model) : undefined;
}

export async function getRatios(this: ILoadOptionsFunctions): Promise<INodePropertyOptions[]> {
	const ratios = chosenModel(this)?.ratios ?? RATIOS;
	return ratios.map((ratio) => ({ name: ratio, value: ratio }));
}

export async function getResolutions(this: ILoadOptionsFunctions): Promise<INodePropertyOptions[]> {
	const model = chosenModel(this);
	const resolutions = model?.resolutions ?? RESOLUTIONS;
	return [
		{
			name: model ? `Model Default (${model.defaultResolution})` : 'Model Default',
			value: '',
			description: 'Leave the choice to the model',
		},
		...resolutions.map((resolution) => ({ name: resolution, value: resolution })),
	];
}
