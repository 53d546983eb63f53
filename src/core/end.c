
#if defined(__CUDACC__)
#pragma nv_diagnostic pop
#endif

#endif /* DEVTENSOR_IMPLEMENTATION_DONE */
#endif /* DEVTENSOR_IMPLEMENTATION */
