from django.urls import path

from voiceapp.dashboard import document_views, message_views, tool_views, views, webhook_views

app_name = "dashboard"
urlpatterns = [
    path("", views.home, name="home"),
    path("organizations/new/", views.org_create, name="org_create"),
    path("organizations/switch/", views.org_switch, name="org_switch"),
    path("personas/", views.persona_list_view, name="persona_list"),
    path("personas/new/", views.persona_create_view, name="persona_create"),
    path("personas/<int:pk>/", views.persona_edit_view, name="persona_edit"),
    path(
        "personas/<int:pk>/voice-preview/",
        views.persona_voice_preview,
        name="persona_voice_preview",
    ),
    path(
        "personas/<int:pk>/voice-preview.wav",
        views.persona_voice_preview_audio,
        name="persona_voice_preview_audio",
    ),
    path("personas/<int:pk>/delete/", views.persona_delete_view, name="persona_delete"),
    path("personas/<int:pk>/facts/", views.persona_fact_create_view, name="persona_fact_create"),
    path(
        "personas/<int:pk>/facts/<int:fact_pk>/",
        views.persona_fact_edit_view,
        name="persona_fact_edit",
    ),
    path(
        "personas/<int:pk>/facts/<int:fact_pk>/delete/",
        views.persona_fact_delete_view,
        name="persona_fact_delete",
    ),
    path(
        "personas/<int:pk>/facts/<int:fact_pk>/move/",
        views.persona_fact_move_view,
        name="persona_fact_move",
    ),
    path("voices/", views.voice_list_view, name="voice_list"),
    path("voices/<int:pk>/preview/", views.voice_preview, name="voice_preview"),
    path("voices/<int:pk>/preview.wav", views.voice_preview_audio, name="voice_preview_audio"),
    path("keys/", views.keys, name="keys"),
    path("keys/secret/", views.secret_key_create_view, name="secret_key_create"),
    path("keys/secret/<int:pk>/revoke/", views.secret_key_revoke_view, name="secret_key_revoke"),
    path("keys/publishable/", views.publishable_key_create_view, name="publishable_key_create"),
    path(
        "keys/publishable/<int:pk>/revoke/",
        views.publishable_key_revoke_view,
        name="publishable_key_revoke",
    ),
    path("llm/", views.llm_endpoints, name="llm_endpoints"),
    path("llm/new/", views.llm_endpoint_create_view, name="llm_endpoint_create"),
    path("llm/<int:pk>/", views.llm_endpoint_edit_view, name="llm_endpoint_edit"),
    path("llm/<int:pk>/delete/", views.llm_endpoint_delete_view, name="llm_endpoint_delete"),
    path("llm/<int:pk>/test/", views.llm_endpoint_test_view, name="llm_endpoint_test"),
    path("webhooks/", webhook_views.webhooks, name="webhooks"),
    path("webhooks/new/", webhook_views.webhook_create_view, name="webhook_create"),
    path("webhooks/<int:pk>/delete/", webhook_views.webhook_delete_view, name="webhook_delete"),
    path(
        "webhooks/deliveries/<int:pk>/",
        webhook_views.webhook_delivery_view,
        name="webhook_delivery",
    ),
    path(
        "webhooks/deliveries/<int:pk>/resend/",
        webhook_views.webhook_resend_view,
        name="webhook_resend",
    ),
    path("widget/", views.widget, name="widget"),
    path("widget/test-session/<int:pk>/", views.widget_test_session, name="widget_test_session"),
    path("calls/", views.call_list_view, name="call_list"),
    path("calls/<uuid:pk>/", views.call_detail_view, name="call_detail"),
    path("calls/<uuid:pk>/recording.ogg", views.call_recording_audio, name="call_recording"),
    path(
        "personas/<int:pk>/documents/upload/",
        document_views.document_upload_view,
        name="persona_document_upload",
    ),
    path(
        "personas/<int:pk>/documents/url/",
        document_views.document_url_view,
        name="persona_document_url",
    ),
    path(
        "personas/<int:pk>/documents/status/",
        document_views.documents_status_view,
        name="persona_documents_status",
    ),
    path(
        "personas/<int:pk>/documents/<int:document_pk>/",
        document_views.document_detail_view,
        name="persona_document_detail",
    ),
    path(
        "personas/<int:pk>/documents/<int:document_pk>/refresh/",
        document_views.document_refresh_view,
        name="persona_document_refresh",
    ),
    path(
        "personas/<int:pk>/documents/<int:document_pk>/delete/",
        document_views.document_delete_view,
        name="persona_document_delete",
    ),
    path("personas/<int:pk>/tools/new/", tool_views.tool_create_view, name="persona_tool_create"),
    path(
        "personas/<int:pk>/tools/<int:tool_pk>/",
        tool_views.tool_edit_view,
        name="persona_tool_edit",
    ),
    path(
        "personas/<int:pk>/tools/<int:tool_pk>/test/",
        tool_views.tool_test_view,
        name="persona_tool_test",
    ),
    path(
        "personas/<int:pk>/tools/<int:tool_pk>/delete/",
        tool_views.tool_delete_view,
        name="persona_tool_delete",
    ),
    path("messages/", message_views.inbox, name="messages"),
    path("messages/<int:pk>/mark/", message_views.message_mark_view, name="message_mark"),
    path("analytics/", views.analytics_view, name="analytics"),
    path("team/", views.team, name="team"),
    path("team/invite/", views.invitation_create_view, name="invitation_create"),
    path(
        "team/invitations/<int:pk>/revoke/", views.invitation_revoke_view, name="invitation_revoke"
    ),
    path("team/members/<int:pk>/remove/", views.membership_remove_view, name="membership_remove"),
    path("team/members/<int:pk>/role/", views.membership_role_view, name="membership_role"),
    path("invitations/<str:token>/", views.invitation_accept, name="invitation_accept"),
]
