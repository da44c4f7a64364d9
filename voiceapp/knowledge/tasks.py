from celery import shared_task

from .services import document_process, documents_refresh_due


@shared_task(name="knowledge.process_document")
def process_document(document_id: int) -> str:
    document = document_process(document_id=document_id)
    return "deleted" if document is None else str(document.status)


@shared_task(name="knowledge.refresh_due_documents")
def refresh_due_documents() -> int:
    return documents_refresh_due()
