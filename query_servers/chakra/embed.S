/* Links dragnet.js into the binary so dragnet-chakra runs from any directory. */
    .section .rodata
    .global dragnet_js_start
    .global dragnet_js_end
dragnet_js_start:
    .incbin "dragnet.js"
dragnet_js_end:
    .byte 0
    .section .note.GNU-stack,"",@progbits
