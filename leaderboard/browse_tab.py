"""Gradio wiring for the Browse tab: items, their audio, each model's replies."""
from __future__ import annotations

import gradio as gr

from . import browse

NO_BENCHMARK = "_The benchmark is still being prepared (see the status line above)._"


def build_browse_tab(ctx) -> None:
    """ctx: an object with `.benchmark` (or None while preparing) and `.store`."""
    with gr.Row():
        collection = gr.Radio([(v, k) for k, v in browse.COLLECTIONS.items()], value="scripts",
                              label="Collection")
        refresh = gr.Button("Refresh", scale=0)
    item = gr.Dropdown(label="Item", choices=[], interactive=True)
    detail = gr.Markdown(NO_BENCHMARK)
    with gr.Row():
        clips = [gr.Audio(type="filepath", label=f"clip {i + 1}", interactive=False, visible=False,
                          buttons=["download"]) for i in range(browse.MAX_CLIPS)]
    gr.Markdown("#### Replies")
    with gr.Row():
        model = gr.Dropdown(label="Model", choices=[], interactive=True)
        request = gr.Dropdown(label="Request (task/item/variant)", choices=[], interactive=True)
    reply_text = gr.Markdown()
    reply_audio = gr.Audio(type="filepath", label="reply audio", interactive=False, buttons=["download"])

    def list_items(coll):
        b = ctx.benchmark
        if b is None:
            return gr.update(choices=[], value=None), gr.update(choices=[])
        choices = browse.item_choices(b, coll)
        models = ctx.store.models_with_replies(b.hash)
        return (gr.update(choices=choices, value=choices[0][1] if choices else None),
                gr.update(choices=models, value=models[0] if models else None))

    def show_item(coll, item_id):
        b = ctx.benchmark
        if b is None or not item_id:
            return [NO_BENCHMARK, gr.update(choices=[], value=None)] + [gr.update(visible=False)] * browse.MAX_CLIPS
        view = browse.item_view(b, coll, item_id)
        audio_updates = []
        for i in range(browse.MAX_CLIPS):
            if i < len(view.clips):
                label, path = view.clips[i]
                audio_updates.append(gr.update(value=path, label=label, visible=True))
            else:
                audio_updates.append(gr.update(value=None, visible=False))
        req = view.request_ids[0] if view.request_ids else None
        return [view.markdown, gr.update(choices=view.request_ids, value=req)] + audio_updates

    def show_reply(model_name, request_id):
        b = ctx.benchmark
        if b is None or not model_name or not request_id:
            return "", None
        reply = browse.find_reply(ctx.store, b.hash, model_name, request_id)
        path = str(ctx.store.abspath(reply.audio_path)) if reply and reply.audio_path else None
        return browse.reply_markdown(reply), path

    for trigger in (collection.change, refresh.click):
        trigger(list_items, [collection], [item, model])
    item.change(show_item, [collection, item], [detail, request, *clips])
    for trigger in (model.change, request.change):
        trigger(show_reply, [model, request], [reply_text, reply_audio])
    return list_items, collection, item, model
