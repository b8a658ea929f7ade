"""Gradio wiring for the Browse tab: items, their audio, each model's replies.

Audio plays from arena/web/media.py's token routes (a signed benchmark-clip or reply key), never from a file path
handed to Gradio."""
from __future__ import annotations

import gradio as gr

from arena.web.media import audio_html
from eval_backend.moderation.replies import playable
from space_shell.tab_contract import PageLoad, TabHandles

from . import browse

NO_BENCHMARK = "_The benchmark is still being prepared (see the status line above)._"


def build_browse_tab(ctx) -> TabHandles:
    """ctx: an object with `.benchmark` (or None while preparing), `.store`, `.media` (arena.web.media.MediaTokens) and
    `.arena` (its `reply_cleared`: a reply that can be played is shown only once screened clean)."""
    with gr.Row():
        collection = gr.Radio([(v, k) for k, v in browse.COLLECTIONS.items()], value="scripts",
                              label="Collection")
        refresh = gr.Button("Refresh", scale=0)
    # allow_custom_value: a value from before a collection switch may still be in flight when the choices change
    # (Gradio would refuse it as "not in the list of choices"); the handlers check it against the benchmark
    item = gr.Dropdown(label="Item", choices=[], interactive=True, allow_custom_value=True, elem_id="browse-item")
    detail = gr.Markdown(NO_BENCHMARK)
    with gr.Row():
        clips = [gr.HTML(audio_html(f"clip {i + 1}", None), visible=False, js_on_load=None, container=True,
                         padding=True, elem_id=f"browse-clip-{i}") for i in range(browse.MAX_CLIPS)]
    gr.Markdown("#### Replies")
    with gr.Row():
        model = gr.Dropdown(label="Model", choices=[], interactive=True, elem_id="browse-model")
        request = gr.Dropdown(label="Request", choices=[], interactive=True, allow_custom_value=True,
                              elem_id="browse-request")
    reply_text = gr.Markdown(elem_id="browse-reply-text")
    reply_audio = gr.HTML(audio_html("reply audio", None), js_on_load=None, container=True, padding=True,
                          elem_id="browse-reply-audio", visible=False)      # shown with a reply that has audio

    def list_items(coll):
        b = ctx.benchmark
        if b is None:
            return gr.update(choices=[], value=None), gr.update(choices=[])
        choices = browse.item_choices(b, coll)
        models = ctx.store.models_with_replies(b.hash)
        return (gr.update(choices=choices, value=browse.opening_item(b, coll)),
                gr.update(choices=models, value=models[0] if models else None))

    def show_item(coll, item_id):
        b = ctx.benchmark
        if b is None or not item_id:
            return [NO_BENCHMARK, gr.update(choices=[], value=None)] + [gr.update(visible=False)] * browse.MAX_CLIPS
        try:
            view = browse.item_view(b, coll, item_id)
        except (KeyError, ValueError):      # an item of the collection shown before a switch: the switch follows
            return [gr.update(), gr.update()] + [gr.update()] * browse.MAX_CLIPS
        audio_updates = []
        for i in range(browse.MAX_CLIPS):
            if i < len(view.clips):
                label, path = view.clips[i]
                url = ctx.media.clip_url(b.hash, coll, item_id, i) if path else None
                audio_updates.append(gr.update(value=audio_html(label, url), visible=True))
            else:
                audio_updates.append(gr.update(value=audio_html(f"clip {i + 1}", None), visible=False))
        ids = browse.spoken_first(view.request_ids)
        choices = [(browse.request_label(b, rid), rid) for rid in ids]
        return [view.markdown, gr.update(choices=choices, value=ids[0] if ids else None)] + audio_updates

    def show_reply(model_name, request_id):
        b = ctx.benchmark
        none = gr.update(value=audio_html("reply audio", None), visible=False)    # no empty, disabled player
        if b is None or not model_name or not request_id:
            return "", none
        reply = browse.find_reply(ctx.store, b.hash, model_name, request_id)
        if ctx.arena.reply_blinded(reply):          # a battle can play it: never shown with its model's name
            return browse.BLINDED, none
        if reply is not None and playable(ctx.store, reply) and not ctx.arena.reply_cleared(reply):
            return browse.HELD, none      # not screened clean: nothing of it shown
        ok = reply is not None and reply.status == "ok" and reply.audio_path
        if not ok:
            return browse.reply_markdown(reply), none
        url = ctx.media.reply_url(reply.model, reply.benchmark_hash, reply.request_id)
        return browse.reply_markdown(reply), gr.update(value=audio_html("reply audio", url), visible=True)

    for trigger in (collection.change, refresh.click):
        trigger(list_items, [collection], [item, model])
    item.change(show_item, [collection, item], [detail, request, *clips])
    for trigger in (model.change, request.change):
        trigger(show_reply, [model, request], [reply_text, reply_audio])
    return TabHandles(loads=(PageLoad(list_items, [collection], [item, model]),))
